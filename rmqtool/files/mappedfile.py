"""One memory-mapped store file and its write and flush positions.

A new file is sparse, as the broker's are until written: a store of one message takes a few
pages of disk, not 1.4 GB. Its creation is refused when the file system has less room than the
file's full size, so it can be filled; a disk that fills up anyway (another writer) makes a
later write into the map fail with SIGBUS. `preallocate` (broker.conf `warmMapedFileEnable`,
`--preallocate`) allocates every block with `posix_fallocate` instead: more disk at once, and
a full disk is an error at creation, never later. `wrote` is where the next append goes,
`flushed` how far `fdatasync` has made the bytes durable (nothing is staged outside the map, so
the broker's separate committed position equals `wrote`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import gc
import mmap
import os
from pathlib import Path

import numpy as np

from rmqtool.errors import RmqError
from rmqtool.files.paths import parse_offset_name, temporary_name

MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)  # Linux 5.14
PREFAULT_WINDOW = 16 << 20
IOV_MAX = 1024  # buffers one pwritev or sendmsg takes (Linux)
PAGE = mmap.PAGESIZE
_libc = ctypes.CDLL(None, use_errno=True)  # madvise through ctypes runs without the GIL
_libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


class MappedFile:
    """A read-write map of `path` (exactly `size` bytes); `arr` is a uint8 view for kernels."""

    def __init__(self, path: Path, size: int, *, create: bool = False, preallocate: bool = False) -> None:
        self.path = Path(path)
        self.size = size
        start = parse_offset_name(self.path.name)
        self.from_offset = start if start is not None else 0
        self.fd = _create(self.path, size, preallocate) if create else os.open(self.path, os.O_RDWR)
        try:
            actual = os.fstat(self.fd).st_size
            if actual != size:
                raise RmqError(f"{self.path}: size {actual}, expected {size} (check the segment size settings)")
            self.map = mmap.mmap(self.fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(self.fd)
            raise
        self.arr = np.frombuffer(self.map, dtype=np.uint8)
        self.wrote = 0
        self.flushed = 0
        self.populated = 0  # bytes below this are mapped for writing already
        self.released = 0  # bytes below this were unmapped after use

    def prefault(self, end: int) -> None:
        """Map pages for writing up to `end` ahead of the writer, a window at a time (never past
        `end`'s page: a populated page is a dirty page, which a sparse file then stores).

        One madvise(MADV_POPULATE_WRITE) per window costs a fraction of a page fault per
        page; kernels without it (before 5.14) fault page by page as before.
        """
        end = min(self.size, -(-end // PAGE) * PAGE)
        while self.populated < end:
            start = self.populated
            length = min(PREFAULT_WINDOW, end - start)
            if length <= 0 or not self._advise(start, length, MADV_POPULATE_WRITE):
                self.populated = self.size
                return
            self.populated = max(self.populated, start + length)

    def release(self, end: int) -> None:
        """Unmap the pages below `end` (page cache keeps them, dirty or not): bounds resident memory."""
        end -= end % PAGE
        if end > self.released:
            self._advise(self.released, end - self.released, mmap.MADV_DONTNEED)
            self.released = end

    def release_range(self, start: int, end: int) -> None:
        """Unmap the whole pages in [start, end) a reader went through; a reader may come back over
        pages another pass let go of, so this keeps no mark."""
        start -= start % PAGE
        end -= end % PAGE
        if end > start:
            self._advise(start, end - start, mmap.MADV_DONTNEED)

    def _advise(self, start: int, length: int, advice: int) -> bool:
        arr = self.arr
        if arr is None:
            return False
        return _libc.madvise(arr.ctypes.data + start, length, advice) == 0

    @property
    def room(self) -> int:
        return self.size - self.wrote

    @property
    def end_offset(self) -> int:
        """The physical offset just after the last written byte."""
        return self.from_offset + self.wrote

    def append(self, data) -> int:
        """Write `data` at the write position; returns where it went (within the file)."""
        at = self.wrote
        if at + len(data) > self.populated:
            self.prefault(at + len(data))
        self.map[at : at + len(data)] = data
        self.wrote = at + len(data)
        return at

    def write(self, *parts) -> int:
        """Write `parts` back to back at the write position through the file rather than the map (the page
        cache both share): whole pages written so are not zeroed and faulted in first, which bytes that came
        from elsewhere (a replica's) do not need; one call for many parts. Returns where they went."""
        at = self.wrote
        for i in range(0, len(parts), IOV_MAX):
            batch = parts[i : i + IOV_MAX]
            want = sum(len(p) for p in batch)
            done = os.pwritev(self.fd, batch, self.wrote)
            if done < want:  # a short write (a signal, a full disk): the rest in one piece
                rest = memoryview(b"".join(batch))[done:]
                while rest:
                    n = os.pwrite(self.fd, rest, self.wrote + want - len(rest))
                    rest = rest[n:]
            self.wrote += want
        return at

    def flush(self) -> None:
        """Make everything written so far durable (fdatasync)."""
        if self.flushed < self.wrote:
            os.fdatasync(self.fd)
            self.flushed = self.wrote

    def close(self) -> None:
        if self.map.closed:
            return
        self.arr = None  # the map cannot close while a view of it is alive
        try:
            self.map.close()
        except BufferError:  # a view still waits in a reference cycle
            gc.collect()
            with contextlib.suppress(BufferError):  # held by a traceback: unmapped when that goes
                self.map.close()
        os.close(self.fd)

    def destroy(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)


def free_bytes(directory: Path) -> int:
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


def _create(path: Path, size: int, preallocate: bool) -> int:
    """Create `path` at its full size (sparse, or allocated), atomically: it is sized under a
    temporary name and renamed into place, so a crash never leaves a short file under a segment's name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        raise RmqError(f"{path} already exists")
    room = free_bytes(path.parent)
    if room < size:
        raise RmqError(f"not enough free space for {path}: it needs {size} bytes, the file system has {room}")
    tmp = path.with_name(temporary_name(path.name))
    fd = None
    try:
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        if preallocate:
            os.posix_fallocate(fd, 0, size)
        else:
            os.ftruncate(fd, size)
        os.rename(tmp, path)
    except BaseException as e:  # a full disk, or an interrupt (even as open returns): no file stays half made
        if fd is not None:
            os.close(fd)
        tmp.unlink(missing_ok=True)
        if not isinstance(e, OSError):
            raise
        if fd is None:
            raise RmqError(f"cannot create {path}: {e.strerror}") from None
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise RmqError(f"disk full: cannot allocate {size} bytes for {path}") from None
        raise RmqError(f"cannot allocate {path}: {e.strerror}") from None
    return fd
