"""Files a plan removes or cuts, grouped for a person: one group per structure and reason, with the
files' sizes (`clean` and `recover` show their plans this way)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from rmqtool.report import structure_of


@dataclass(frozen=True)
class FileSize:
    """A file's size and the bytes it takes on disk (less for a sparse file)."""

    bytes: int = 0
    disk_bytes: int = 0

    @classmethod
    def of(cls, path: str | os.PathLike) -> FileSize:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return cls()
        return cls(st.st_size, st.st_blocks * 512)


@dataclass
class FileGroup:
    """Files of one structure that go for one reason, in the order they were planned."""

    structure: str
    reason: str
    files: list[str] = field(default_factory=list)
    bytes: int = 0
    disk_bytes: int = 0

    def to_json(self, sizes: bool = True) -> dict:
        """The group as data: its files as count, first and last (and their bytes with `sizes`)."""
        out = {"structure": self.structure, "reason": self.reason, "count": len(self.files),
               "first": self.files[0], "last": self.files[-1]}
        return {**out, "bytes": self.bytes, "diskBytes": self.disk_bytes} if sizes else out


def group_files(items: Iterable[tuple[str, str]], sizes: dict[str, FileSize] | None = None) -> list[FileGroup]:
    """(file, reason) pairs as one group per structure and reason, in order of first appearance."""
    groups: dict[tuple[str, str], FileGroup] = {}
    for file, reason in items:
        key = (structure_of(file), reason)
        g = groups.setdefault(key, FileGroup(*key))
        g.files.append(file)
        size = (sizes or {}).get(file, FileSize())
        g.bytes += size.bytes
        g.disk_bytes += size.disk_bytes
    return list(groups.values())
