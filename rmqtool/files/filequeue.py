"""A directory of equal-size mapped files named by the offset of their first byte.

Offsets run continuously across files: file k starts at k x file size (or where the first
kept file starts after old files were cleaned). The queue maps files lazily, appends to
the last one and rolls to a new one, finds the file holding an offset, and truncates.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.files.mappedfile import MappedFile
from rmqtool.files.paths import offset_name, parse_offset_name


class FileQueue:
    def __init__(self, directory: Path, file_size: int, preallocate: bool = False) -> None:
        self.directory = Path(directory)
        self.file_size = file_size
        self.preallocate = preallocate  # new files allocated whole rather than sparse
        self.files: list[MappedFile] = []
        if self.directory.is_dir():
            starts = sorted(s for s in (parse_offset_name(p.name) for p in self.directory.iterdir()) if s is not None)
            for start in starts:
                if start % file_size:
                    raise RmqError(f"{self.directory / offset_name(start)}: start offset is not a multiple of the file "
                                   f"size {file_size}")
            for prev, start in itertools.pairwise(starts):
                if start != prev + file_size:
                    raise RmqError(f"{self.directory}: files are not contiguous after {offset_name(prev)}")
            try:
                for start in starts:
                    self.files.append(MappedFile(self.directory / offset_name(start), file_size))
            except BaseException:
                self.close()
                raise

    @property
    def last(self) -> MappedFile | None:
        return self.files[-1] if self.files else None

    @property
    def min_offset(self) -> int:
        return self.files[0].from_offset if self.files else 0

    @property
    def max_offset(self) -> int:
        """Where the next byte goes."""
        return self.files[-1].end_offset if self.files else 0

    def roll(self, start_offset: int | None = None) -> MappedFile:
        """Create the next file (the first one at `start_offset` rounded down to a file boundary)."""
        if self.files:
            start = self.files[-1].from_offset + self.file_size
        else:
            start = (start_offset or 0) - (start_offset or 0) % self.file_size
        mf = MappedFile(self.directory / offset_name(start), self.file_size, create=True, preallocate=self.preallocate)
        self.files.append(mf)
        return mf

    def writable(self, start_offset: int = 0) -> MappedFile:
        """The last file, or a new one when there is none or it is full."""
        last = self.last
        if last is None or last.room == 0:
            return self.roll(start_offset)
        return last

    def find(self, offset: int) -> MappedFile | None:
        if not self.files or offset < self.min_offset:
            return None
        k = (offset - self.min_offset) // self.file_size
        return self.files[k] if k < len(self.files) else None

    def truncate(self, offset: int) -> None:
        """Forget everything at and after `offset`: later files are deleted, the holding file zeroed past it."""
        while self.files and self.files[-1].from_offset >= offset and len(self.files) > 0:
            self.files.pop().destroy()
        last = self.last
        if last is not None and offset < last.from_offset + self.file_size:
            cut = offset - last.from_offset
            last.map[cut:last.wrote] = bytes(max(last.wrote - cut, 0))
            last.wrote = last.flushed = cut

    def flush(self) -> None:
        for mf in self.files:
            mf.flush()

    def close(self) -> None:
        for mf in self.files:
            mf.close()
