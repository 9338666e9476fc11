"""A cut: bytes recovery zeroes at the end of a file's data (a commitlog tail, consume-queue entries past the
recovered end), as a finding whose offset is the physical / logical one of its first byte."""

from __future__ import annotations

from pathlib import Path

from rmqtool.report import Finding

CUT = "cut"  # the finding kind of a cut


def cut(file: Path, start: int, end: int, reason: str) -> Finding:
    """A cut of bytes [start, end) of `file` (a commitlog segment or consume-queue file, named by the
    offset of its first byte)."""
    return Finding(str(file), int(file.name) + start, reason, end - start, kind=CUT)


def cut_range(f: Finding) -> tuple[int, int]:
    """[start, end) of a cut within its file."""
    start = f.offset - int(Path(f.file).name)
    return start, start + f.bytes
