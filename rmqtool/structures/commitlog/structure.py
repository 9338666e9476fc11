"""The commitlog as the registry lists it: segments of records, the log every other structure points into."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmqtool.report import Finding
from rmqtool.structures.structure import Repair, Structure

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

    def file_findings(self, view: Any) -> list[Finding]:
        from rmqtool.structures.commitlog.geometry import store_findings

        return store_findings(view)

    def repairs(self, report: Any, view: Any) -> list[Repair]:
        from rmqtool.structures.commitlog.repairs import repairs

        return repairs(report.findings, [s.path for s in view.segments], view.config.mappedFileSizeCommitLog,
                       report.log_end)


COMMITLOG = CommitLog()
