"""The commitlog as the registry lists it: segments of records, the log every other structure points into."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmqtool.report import Finding
from rmqtool.structures.structure import Structure

SEGMENT_KIND = "commitlog segment"


class CommitLog(Structure):
    name = "commitlog"
    folder = "commitlog"
    file_kind = SEGMENT_KIND

    @property
    def refused_at_start(self) -> tuple[str, ...]:
        from rmqtool.structures.commitlog.geometry import REFUSED_AT_START

        return REFUSED_AT_START

    def recognise(self, head: bytes, size: int) -> str | None:
        from rmqtool.structures.commitlog.recognize import segment_refusal

        return segment_refusal(head)

    def place(self, path: Path) -> Path | None:
        return path.parent.parent if path.parent.name == self.folder else None

    def info(self, view: Any, doc: dict) -> tuple[str, dict] | None:
        from rmqtool.structures.commitlog.summary import section

        return "commitlog", section(view)

    def file_findings(self, view: Any) -> list[Finding]:
        from rmqtool.structures.commitlog.geometry import store_findings

        return store_findings(view)


COMMITLOG = CommitLog()
