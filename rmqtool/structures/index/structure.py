"""The hash index as the registry lists it: files of key slots and entries into the log."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rmqtool.structures.index import recovery
from rmqtool.structures.index.expiry import orphaned_files
from rmqtool.structures.index.recognize import index_file_refusal
from rmqtool.structures.recoveryplan import CUT, LOAD, REBUILD, RecoveryContext, RecoveryPlan, RedispatchCounter
from rmqtool.structures.replicas import Comparison, Pair
from rmqtool.structures.structure import REBUILD_INDEX, LogChecker, Repair, Structure, mend_all
from rmqtool.structures.view import CheckReport, Opener, RecoveredStore, StoreView

if TYPE_CHECKING:
    from rmqtool.files.paths import StorePaths

INDEX_FILE_KIND = "index file"


class Index(Structure):
    name = "index"
    folder = "index"
    file_kind = INDEX_FILE_KIND

    def recognise(self, head: bytes, size: int) -> str | None:
        return index_file_refusal(head, size)

    def repairs(self, report: CheckReport, view: StoreView) -> list[Repair]:
        """Every finding of its own is mended by one rebuild-index."""
        return mend_all(report.findings, self.name, REBUILD_INDEX, str(view.paths.index),
                        "dispatch the index again from the log")

    def place(self, path: Path) -> Path | None:
        return path.parent.parent if path.parent.name == self.folder else None

    def log_checker(self, view: StoreView, report: CheckReport) -> LogChecker | None:
        """Entries against the records they point at, keys against the entries (`logcheck`); None when the
        store's config turns the index off."""
        if not view.config.messageIndexEnable:
            return None
        from rmqtool.structures.index.logcheck import IndexChecker  # start-up: numpy; lookups list the registry

        return IndexChecker(view, report)

    def check_file(self, path: Path, opener: Opener, report: CheckReport) -> None:
        """One index file alone: its size, header and chains, by the settings `opener.config` holds
        (`maxHashSlotNum`, `maxIndexNum`, `given`): a structure reads no broker.conf."""
        from rmqtool.structures.index.logcheck import check_file  # start-up: numpy; lookups list the registry

        check_file(path, opener.config, report)

    def info(self, view: StoreView, doc: dict) -> tuple[str, dict] | None:
        from rmqtool.structures.index.summary import section  # start-up: numpy; lookups list the registry

        return "index", section(view, doc.get("commitlog", {}).get("endOffset"))

    def orphans(self, paths: StorePaths, min_offset: int) -> list[tuple[str, str]]:
        """Index files whose endPhyOffset is below `min_offset` (`expiry`)."""
        return orphaned_files(paths.index, min_offset)

    def plan_recovery(self, phase: str, view: StoreView, plan: RecoveryPlan, context: RecoveryContext) -> None:
        """Cut: the files newer than the checkpoint after a crash, past a truncation's end. Rebuild: the whole
        index when the check found it broken."""
        if phase == LOAD:
            recovery.plan_load(view, plan)
        elif phase == CUT:
            recovery.plan_cut(view, plan, context)
        elif phase == REBUILD:
            recovery.plan_rebuild_broken(view, plan, context.findings)

    def redispatch_counter(self, view: StoreView, plan: RecoveryPlan) -> RedispatchCounter | None:
        """None when the store's config turns the index off."""
        if not view.config.messageIndexEnable:
            return None
        return recovery.KeyCounter(plan, recovery.kept_end(view, plan))

    def count_redispatched(self, recovered: RecoveredStore, plan: RecoveryPlan) -> None:
        recovery.count_redispatched(recovered, plan)

    # -- two replicas (`diff`) ------------------------------------------------------------------------
    def compare(self, pair: Pair) -> Comparison | None:
        from rmqtool.structures.index.compare import compare  # start-up: the registry loads no comparer

        return compare(pair)


INDEX = Index()
