"""The hash index as the registry lists it: files of key slots and entries into the log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmqtool.structures.structure import Repair, Structure

INDEX_FILE_KIND = "index file"


class Index(Structure):
    name = "index"
    folder = "index"
    file_kind = INDEX_FILE_KIND

    def recognise(self, head: bytes, size: int) -> str | None:
        from rmqtool.structures.index.recognize import index_file_refusal

        return index_file_refusal(head, size)

    def repairs(self, report: Any, view: Any) -> list[Repair]:
        from rmqtool.structures.index.repairs import repairs

        return repairs(report.findings, str(view.paths.index))

    def place(self, path: Path) -> Path | None:
        return path.parent.parent if path.parent.name == self.folder else None


INDEX = Index()
