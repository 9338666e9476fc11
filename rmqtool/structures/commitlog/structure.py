"""The commitlog as the registry lists it: segments of records, the log every other structure points into."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmqtool.report import Finding
from rmqtool.structures.replicas import Comparison, Pair
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

    def info(self, view: Any, doc: dict) -> tuple[str, dict] | None:
        from rmqtool.structures.commitlog.summary import section

        return "commitlog", section(view)

    def file_findings(self, view: Any) -> list[Finding]:
        from rmqtool.structures.commitlog.geometry import store_findings

        return store_findings(view)

    def repairs(self, report: Any, view: Any) -> list[Repair]:
        from rmqtool.structures.commitlog.repairs import repairs

        return repairs(report.findings, [s.path for s in view.segments], view.config.mappedFileSizeCommitLog,
                       report.log_end)

    def check_file(self, path: Path, opener: Any, report: Any) -> None:
        """A segment alone: its records (length, magic, body CRC, physicalOffset, blank marker, garbage
        tail) and its size, when configured."""
        from rmqtool.structures.commitlog.geometry import sequence_findings

        reader = opener.reader(path)
        if reader.start_note is not None:
            report.notes.append(reader.start_note)
        report.reporter.extend(sequence_findings(reader.segments, reader.segment_size))
        for chunk in reader.scan(verify_crc=True):
            report.reporter.extend(chunk.findings)
            if chunk.batch is not None:
                report.messages += len(chunk.batch)

    # -- two replicas (`diff`) ------------------------------------------------------------------------
    def pair_refusal(self, a: Any, b: Any) -> str | None:
        """Different segment sizes, or a segment not at a multiple of the size: a slave names its files as its
        master does."""
        from rmqtool.structures.commitlog.compare import pair_refusal  # start-up: the registry loads no comparer

        return pair_refusal(a, b)

    def compare(self, pair: Pair) -> Comparison | None:
        from rmqtool.structures.commitlog.compare import compare  # start-up: the registry loads no comparer

        return compare(pair)


COMMITLOG = CommitLog()
