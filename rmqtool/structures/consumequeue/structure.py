"""Consume queues as the registry lists them: per (topic, queue) files of fixed-size entries into the log."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rmqtool.report import Finding
from rmqtool.structures.commitlog.repairs import renumbered
from rmqtool.structures.consumequeue.expiry import orphaned_files
from rmqtool.structures.consumequeue.recognize import queue_file_refusal
from rmqtool.structures.consumequeue.rules import REFUSED_AT_START, store_findings
from rmqtool.structures.consumequeue.summary import section
from rmqtool.structures.structure import REBUILD_QUEUES, LogChecker, Repair, Structure, mend_all
from rmqtool.structures.view import CheckReport, Opener, RecoveredStore, StoreView

if TYPE_CHECKING:
    from rmqtool.files.paths import StorePaths
from rmqtool.structures.recoveryplan import (
    CUT,
    LOAD,
    PAST_END,
    REBUILD,
    RecoveryContext,
    RecoveryPlan,
    RedispatchCounter,
)
from rmqtool.structures.replicas import Comparison, Pair

QUEUE_FILE_KIND = "consume-queue file"


class ConsumeQueues(Structure):
    name = "consumequeue"
    folder = "consumequeue"
    file_kind = QUEUE_FILE_KIND

    @property
    def refused_at_start(self) -> tuple[str, ...]:
        return REFUSED_AT_START

    def recognise(self, head: bytes, size: int) -> str | None:
        return queue_file_refusal(head, size)

    def place(self, path: Path) -> Path | None:
        # consumequeue/<topic>/<queueId>/<file>; a topic may be named like another structure's folder
        return path.parents[3] if len(path.parents) > 3 and path.parents[2].name == self.folder else None

    def owns(self, path: Path, root: Path) -> bool:
        """Every file under `consumequeue/`: the queue files, and the RocksDB files of a 5.x store's queues."""
        return path.is_relative_to(root / self.folder)

    def keeps_folder(self, folder: Path, root: Path) -> bool:
        return folder == root / self.folder

    def info(self, view: StoreView, doc: dict) -> tuple[str, dict] | None:
        return "consumeQueues", section(view)

    def file_findings(self, view: StoreView) -> list[Finding]:
        return store_findings(view)

    def repairs(self, report: CheckReport, view: StoreView) -> list[Repair]:
        """Every finding of its own is mended by one rebuild-queues, but those only appending the records again
        mends (a gap in a queue's offsets, and what it makes its entries and records show after it: the
        commitlog's cut plans that)."""
        left = {id(f) for f in renumbered(report.findings)}
        return mend_all([f for f in report.findings if id(f) not in left], self.name, REBUILD_QUEUES,
                        str(view.paths.consumequeue), "dispatch every consume queue again from the log")

    def log_checker(self, view: StoreView, report: CheckReport) -> LogChecker | None:
        from rmqtool.structures.consumequeue.check import QueueChecker  # start-up: numpy; lookups list the registry

        return QueueChecker(view, report)

    def check_file(self, path: Path, opener: Opener, report: CheckReport) -> None:
        from rmqtool.structures.consumequeue.check import check_file  # start-up: numpy; lookups list the registry

        check_file(path, opener, report, self.place(path))

    def orphans(self, paths: StorePaths, min_offset: int) -> list[tuple[str, str]]:
        """Queue files whose every entry points below `min_offset` (`expiry`)."""
        return orphaned_files(paths.consumequeue, min_offset)

    def plan_recovery(self, phase: str, view: StoreView, plan: RecoveryPlan, context: RecoveryContext) -> None:
        """Load: each queue's end (or a refusal). Past end: its entries naming records past the log's end.
        Cut: those entries. Rebuild: a queue the check found broken."""
        from rmqtool.structures.consumequeue import recovery  # start-up: listing the registry loads no numpy

        if phase == LOAD:
            recovery.plan_load(view, plan, self.refused_at_start, context.thorough)
        elif phase == PAST_END:
            recovery.plan_past_end(view, plan, context)
        elif phase == CUT:
            recovery.plan_queue_cuts(plan, view.config.mappedFileSizeConsumeQueue)
        elif phase == REBUILD:
            recovery.plan_rebuild(view, plan, context.findings)

    def redispatch_counter(self, view: StoreView, plan: RecoveryPlan) -> RedispatchCounter | None:
        from rmqtool.structures.consumequeue.recovery import QueueCounter  # start-up: as above

        return QueueCounter(plan)

    def count_redispatched(self, recovered: RecoveredStore, plan: RecoveryPlan) -> None:
        from rmqtool.structures.consumequeue.recovery import count_redispatched  # start-up: as above

        count_redispatched(recovered, plan)

    # -- two replicas (`diff`) ------------------------------------------------------------------------
    def compare(self, pair: Pair) -> Comparison | None:
        from rmqtool.structures.consumequeue.compare import compare  # start-up: the registry loads no comparer

        return compare(pair)


CONSUME_QUEUES = ConsumeQueues()
