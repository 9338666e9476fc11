"""Read-only views of a sequence of fixed-size files named by their start offset."""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.files.filecrc import data_extents
from rmqtool.files.paths import parse_offset_name


@dataclass(frozen=True)
class SegmentFile:
    path: Path
    start: int
    size: int

    @property
    def end(self) -> int:
        return self.start + self.size


def list_segments(directory: Path) -> list[SegmentFile]:
    """Files of `directory` named by a 20-digit offset, in offset order (others are ignored)."""
    if not directory.is_dir():
        return []
    out = []
    for entry in os.scandir(directory):
        start = parse_offset_name(entry.name)
        if start is not None and entry.is_file():
            out.append(SegmentFile(Path(entry.path), start, entry.stat().st_size))
    return sorted(out, key=lambda s: s.start)


def single_segment(path: Path) -> SegmentFile:
    """One file given on the command line; its name gives its start offset when it is one."""
    start = parse_offset_name(path.name)
    return SegmentFile(path, start or 0, path.stat().st_size)


@contextmanager
def open_read_only(path: Path) -> Iterator[mmap.mmap | bytes]:
    """The file's bytes through a read-only mmap (never creates or changes anything).

    The map is closed on exit when nothing still borrows it; otherwise it is released as
    soon as the last borrower (a numpy view) goes away.
    """
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, after the map
    except OSError as e:
        raise RmqError(f"cannot open {path}: {e.strerror}") from None
    with f:
        if os.fstat(f.fileno()).st_size == 0:
            yield b""
            return
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if hasattr(mm, "madvise"):
        mm.madvise(mmap.MADV_SEQUENTIAL)
    try:
        yield mm
    finally:
        with contextlib.suppress(BufferError):
            mm.close()


def read_head(path: Path, length: int) -> bytes:
    """The first `length` bytes of a file (fewer when it is shorter), in one read."""
    try:
        with open(path, "rb", buffering=0) as f:
            return f.read(length)
    except OSError as e:
        raise RmqError(f"cannot read {path}: {e.strerror}") from None


def read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise RmqError(f"cannot read {path}: {e.strerror}") from None


READ_WHOLE_BELOW = 64 << 10  # a file this small is read at once: cheaper than mapping it


def map_file(path: Path) -> mmap.mmap | bytes:
    """The file mapped read-only: only the pages a reader touches come into memory (an index file is
    mostly an unwritten tail). The map closes when the last view of it goes away. A small file (a
    64-slot index file, of which a store may hold tens of thousands) is read whole instead."""
    try:
        with open(path, "rb", buffering=0) as f:
            size = os.fstat(f.fileno()).st_size
            if size < READ_WHOLE_BELOW:
                return f.read()
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise RmqError(f"cannot read {path}: {e.strerror}") from None


def data_end(path: Path) -> int | None:
    """End of the file's last allocated extent: bytes past it are a hole (zeros).

    Preallocated segments are sparse until written, so this lets a scan stop at the end of
    the data without reading the unwritten tail. None when the filesystem cannot tell.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        extents = data_extents(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    if extents is None:
        return None
    return extents[-1][1] if extents else 0


def release_pages(buf, start: int, end: int) -> int:
    """Drop this process's mapping of pages in [start, end) that a scan has passed.

    The pages stay in the page cache (a later read faults them back in), so resident memory
    stays bounded by a window instead of growing to the whole segment.
    """
    lo = start - start % mmap.PAGESIZE
    hi = end - end % mmap.PAGESIZE
    if hi > lo and isinstance(buf, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        buf.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
        return hi
    return start


_BACKWARD_WINDOW = 4 << 20


def nonzero_end(path: Path, start: int) -> int:
    """End of the non-zero data at or after `start` in a file (start when only zeros follow).

    Reads backwards from the end of the file's data (holes skipped), a window at a time, so a
    mostly empty 1 GiB segment costs little time and no memory.
    """
    end = data_end(path)
    size = path.stat().st_size
    pos = min(size, end if end is not None else size)
    with open(path, "rb") as f:
        while pos > start:
            lo = max(start, pos - _BACKWARD_WINDOW)
            chunk = os.pread(f.fileno(), pos - lo, lo)
            stripped = chunk.rstrip(b"\0")
            if stripped:
                return lo + len(stripped)
            pos = lo
    return start


def zero_range(file: str | os.PathLike, start: int, end: int) -> None:
    """Zero bytes [start, end) of `file` durably, a window at a time."""
    window = bytes(min(end - start, _BACKWARD_WINDOW))
    with open(file, "r+b") as f:
        for pos in range(start, end, len(window) or 1):
            os.pwrite(f.fileno(), window[: end - pos], pos)
        os.fsync(f.fileno())
