"""Consume queues as the registry lists them: per (topic, queue) files of fixed-size entries into the log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmqtool.report import Finding
from rmqtool.structures.replicas import Comparison, Pair
from rmqtool.structures.structure import REBUILD_QUEUES, Repair, Structure, mend_all

QUEUE_FILE_KIND = "consume-queue file"


class ConsumeQueues(Structure):
    name = "consumequeue"
    folder = "consumequeue"
    file_kind = QUEUE_FILE_KIND

    @property
    def refused_at_start(self) -> tuple[str, ...]:
        from rmqtool.structures.consumequeue.rules import REFUSED_AT_START

        return REFUSED_AT_START

    def recognise(self, head: bytes, size: int) -> str | None:
        from rmqtool.structures.consumequeue.recognize import queue_file_refusal

        return queue_file_refusal(head, size)

    def place(self, path: Path) -> Path | None:
        # consumequeue/<topic>/<queueId>/<file>; a topic may be named like another structure's folder
        return path.parents[3] if len(path.parents) > 3 and path.parents[2].name == self.folder else None

    def info(self, view: Any, doc: dict) -> tuple[str, dict] | None:
        from rmqtool.structures.consumequeue.summary import section

        return "consumeQueues", section(view)

    def file_findings(self, view: Any) -> list[Finding]:
        from rmqtool.structures.consumequeue.rules import store_findings

        return store_findings(view)

    def repairs(self, report: Any, view: Any) -> list[Repair]:
        """Every finding of its own is mended by one rebuild-queues, but those only appending the records again
        mends (a gap in a queue's offsets, and what it makes its entries and records show after it: the
        commitlog's cut plans that)."""
        from rmqtool.structures.commitlog.repairs import renumbered

        left = {id(f) for f in renumbered(report.findings)}
        return mend_all([f for f in report.findings if id(f) not in left], self.name, REBUILD_QUEUES,
                        str(view.paths.consumequeue), "dispatch every consume queue again from the log")

    def log_checker(self, view: Any, report: Any) -> Any:
        from rmqtool.structures.consumequeue.check import QueueChecker

        return QueueChecker(view, report)

    def check_file(self, path: Path, opener: Any, report: Any) -> None:
        from rmqtool.structures.consumequeue.check import check_file

        check_file(path, opener, report, self.place(path))

    # -- two replicas (`diff`) ------------------------------------------------------------------------
    def compare(self, pair: Pair) -> Comparison | None:
        from rmqtool.structures.consumequeue.compare import compare  # start-up: the registry loads no comparer

        return compare(pair)


CONSUME_QUEUES = ConsumeQueues()
