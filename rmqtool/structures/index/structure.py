"""The hash index as the registry lists it: files of key slots and entries into the log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmqtool.structures.replicas import Comparison, Pair
from rmqtool.structures.structure import REBUILD_INDEX, LogChecker, Repair, Structure, mend_all

INDEX_FILE_KIND = "index file"


class Index(Structure):
    name = "index"
    folder = "index"
    file_kind = INDEX_FILE_KIND

    def recognise(self, head: bytes, size: int) -> str | None:
        from rmqtool.structures.index.recognize import index_file_refusal

        return index_file_refusal(head, size)

    def repairs(self, report: Any, view: Any) -> list[Repair]:
        """Every finding of its own is mended by one rebuild-index."""
        return mend_all(report.findings, self.name, REBUILD_INDEX, str(view.paths.index),
                        "dispatch the index again from the log")

    def place(self, path: Path) -> Path | None:
        return path.parent.parent if path.parent.name == self.folder else None

    def log_checker(self, view: Any, report: Any) -> LogChecker | None:
        """Entries against the records they point at, keys against the entries (`logcheck`); None when the
        store's config turns the index off."""
        if not view.config.messageIndexEnable:
            return None
        from rmqtool.structures.index.logcheck import IndexChecker

        return IndexChecker(view, report)

    def check_file(self, path: Path, opener: Any, report: Any) -> None:
        """One index file alone: its size, header and chains, by the settings `opener.config` holds
        (`maxHashSlotNum`, `maxIndexNum`, `given`): a structure reads no broker.conf."""
        from rmqtool.structures.index.logcheck import check_file

        check_file(path, opener.config, report)

    def info(self, view: Any, doc: dict) -> tuple[str, dict] | None:
        from rmqtool.structures.index.summary import section

        return "index", section(view, doc.get("commitlog", {}).get("endOffset"))

    # -- two replicas (`diff`) ------------------------------------------------------------------------
    def compare(self, pair: Pair) -> Comparison | None:
        from rmqtool.structures.index.compare import compare  # start-up: the registry loads no comparer

        return compare(pair)


INDEX = Index()
