"""Consume queues as one interface over their two on-disk forms: 20-byte queue files (4.x, and 5.x
by default) and the 5.x RocksDB consume queue. decode, query, verify and info read queues only
through it, so both forms are read by the same rules.

Reading rule (the broker's): a queue's entries run from its first written entry up to the
first one that is not written; a file queue stops at the first file that is not full.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rmqtool.errors import RmqError
from rmqtool.files.paths import StorePaths
from rmqtool.files.segments import SegmentFile, list_segments
from rmqtool.report import Finding
from rmqtool.structures import consumequeue
from rmqtool.structures.consumequeue import rules
from rmqtool.structures.consumequeue.rocksdb import RocksQueues

if TYPE_CHECKING:
    import numpy as np

_ENTRY = consumequeue.ENTRY.codec
READ_CHUNK_ENTRIES = 1 << 15  # entries of one queue file read at a time (640 KiB)


class MapCache:
    """Read-only maps of files, opened on first use and kept (for repeated point lookups)."""

    def __init__(self) -> None:
        self.maps: dict[Path, mmap.mmap | bytes] = {}

    def get(self, path: Path) -> mmap.mmap | bytes:
        m = self.maps.get(path)
        if m is None:
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError as e:
                raise RmqError(f"cannot open {path}: {e.strerror}") from None
            try:
                size = os.fstat(fd).st_size
                m = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else b""
            finally:
                os.close(fd)
            self.maps[path] = m
        return m

    def close(self) -> None:
        for m in self.maps.values():
            if isinstance(m, mmap.mmap):
                m.close()
        self.maps.clear()


class QueueStore(Protocol):
    """What every consume-queue form answers."""

    kind: str  # "file" or "rocksdb"

    def topics(self) -> list[str]: ...
    def queue_ids(self, topic: str) -> list[int]: ...
    def location(self, topic: str, queue_id: int) -> str: ...
    def read(self, topic: str, queue_id: int) -> Iterator[tuple[np.ndarray, np.ndarray]]: ...
    def read_rows(self, topic: str, queue_id: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
        """As `read`, with the store timestamps the queue itself keeps (None when it keeps none)."""
        ...
    def entry(self, topic: str, queue_id: int, queue_offset: int) -> tuple[int, int, int] | None: ...
    def commit_log_offsets(self, topic: str, queue_id: int, queue_offsets: np.ndarray) -> np.ndarray:
        """The commitLogOffset of the entry at each queue offset; -1 where there is none."""
        ...
    def bounds(self, topic: str, queue_id: int) -> tuple[int, int]: ...
    def findings(self) -> list[Finding]:
        """What the form itself keeps beside its entries, checked against them (entries against the log
        are verify's)."""
        ...
    def close(self) -> None: ...


class FileQueues:
    """`consumequeue/<topic>/<queueId>/<offset>`: files of 20-byte entries."""

    kind = "file"

    def __init__(self, paths: StorePaths, file_size: int, log_start: int = 0) -> None:
        self.paths = paths
        self.file_size = file_size
        self.log_start = log_start  # where the commitlog begins: entries before it point at deleted records
        self.maps = MapCache()
        self._ends: dict[tuple[str, int], tuple[SegmentFile | None, list[SegmentFile]]] = {}  # see `read`
        self._files: dict[tuple[str, int], list[SegmentFile]] = {}
        self._queue_ids: dict[str, list[int]] = {}

    def topics(self) -> list[str]:
        d = self.paths.consumequeue
        return sorted(e.name for e in os.scandir(d) if e.is_dir()) if d.is_dir() else []

    def queue_ids(self, topic: str) -> list[int]:
        """The topic's queue folders, listed once (as `files`)."""
        found = self._queue_ids.get(topic)
        if found is None:
            d = self.paths.consumequeue / topic
            found = sorted(int(e.name) for e in os.scandir(d) if e.is_dir() and e.name.isdigit()) \
                if d.is_dir() else []
            self._queue_ids[topic] = found
        return found

    def location(self, topic: str, queue_id: int) -> str:
        return str(self.paths.queue_dir(topic, queue_id))

    def files(self, topic: str, queue_id: int) -> list[SegmentFile]:
        """The queue's files, listed once (a reader sees the store as it was when first asked)."""
        found = self._files.get((topic, queue_id))
        if found is None:
            directory = self.paths.queue_dir(topic, queue_id)
            if not directory.is_dir():
                raise consumequeue.missing_queue(self.topics(), self.paths.root, topic, queue_id)
            found = self._files[(topic, queue_id)] = list_segments(directory)
        return found

    def read(self, topic: str, queue_id: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Each file's entries, a chunk at a time (`queue_file_chunks`), up to the first file that is not full
        (kept, with the files after it, for `findings`)."""
        files = self.files(topic, queue_id)
        if not files:
            self._ends[(topic, queue_id)] = (None, [])
        for i, seg in enumerate(files):
            held = 0
            for qoffs, entries, last in queue_file_chunks(seg):
                held += len(entries)
                full = held * consumequeue.ENTRY_LEN >= seg.size
                if last and (not full or i == len(files) - 1):  # known before the last yield: a reader may stop
                    self._ends[(topic, queue_id)] = (None, []) if full else (seg, files[i + 1 :])
                yield qoffs, entries
                if last and not full:
                    return

    def read_rows(self, topic: str, queue_id: int) -> Iterator[tuple[np.ndarray, np.ndarray, None]]:
        for qoffs, entries in self.read(topic, queue_id):
            yield qoffs, entries, None

    def entry(self, topic: str, queue_id: int, queue_offset: int) -> tuple[int, int, int] | None:
        pos = queue_offset * consumequeue.ENTRY_LEN
        for seg in self.files(topic, queue_id):
            if seg.start <= pos < seg.start + self.file_size:
                buf = self.maps.get(seg.path)
                at = pos - seg.start
                if at + consumequeue.ENTRY_LEN > len(buf):
                    return None
                found = _ENTRY.unpack_from(buf, at)
                return found if found[0] >= 0 and found[1] > 0 else None
        return None

    def commit_log_offsets(self, topic: str, queue_id: int, queue_offsets: np.ndarray) -> np.ndarray:
        """`entry(...)[0]` of each queue offset (-1 where there is no written entry), one gather per file."""
        import numpy as np

        out = np.full(len(queue_offsets), -1, dtype=np.int64)
        at = consumequeue.byte_of(np.asarray(queue_offsets, dtype=np.int64))
        for seg in self.files(topic, queue_id):
            here = (at >= seg.start) & (at < seg.start + self.file_size)
            if not here.any():
                continue
            entries = consumequeue.decode_entries(self.maps.get(seg.path))
            idx = consumequeue.whole_entries(at[here] - seg.start)
            inside = idx < len(entries)
            picked = entries[idx[inside]]
            found = np.where(consumequeue.valid_mask(picked), picked["commitLogOffset"], -1)
            out[np.flatnonzero(here)[inside]] = found
            del entries, picked
        return out

    def bounds(self, topic: str, queue_id: int) -> tuple[int, int]:
        """(min, max) queue offset as the broker loads them: max after the last file's written entries;
        min at the first entry of the first file that points at or past the log's start
        (`ConsumeQueue.correctMinOffset`), which is the file's first entry unless the log's head is gone.
        Reads the written part of the last file and a few entries of the first, never the rest."""
        files = self.files(topic, queue_id)
        if not files:
            return 0, 0
        first, last = files[0], files[-1]
        written = consumequeue.written_entries(self.maps.get(last.path))
        high = consumequeue.whole_entries(last.start) + written
        buf = self.maps.get(first.path)
        n = written if first is last else consumequeue.whole_entries(len(buf))
        low = consumequeue.whole_entries(first.start) + consumequeue.first_at_or_after(buf, n, self.log_start)
        return min(low, high), high

    def findings(self) -> list[Finding]:
        """The queue-file rules (`rules`): folder names, each file's name and size, and files past the end
        of their queue."""
        out = rules.folder_findings(self.paths.consumequeue)
        for topic in self.topics():
            for qid in self.queue_ids(topic):
                out += rules.file_findings(self.paths.queue_dir(topic, qid), self.file_size)
                if (topic, qid) not in self._ends:  # verify has read every queue already
                    for _ in self.read(topic, qid):
                        pass
                out += rules.past_end_findings(*self._ends[(topic, qid)])
        return out

    def close(self) -> None:
        self.maps.close()


def queue_file_entries(seg: SegmentFile) -> tuple[np.ndarray, np.ndarray]:
    """(queue offsets, entries) of one consume-queue file: the entries before the first one that is
    not written (`consumequeue.written_count`, the broker's reading rule)."""
    import numpy as np

    chunks = list(queue_file_chunks(seg))
    if len(chunks) == 1:
        return chunks[0][0], chunks[0][1]
    return np.concatenate([q for q, _, _ in chunks]), np.concatenate([e for _, e, _ in chunks])


def queue_file_chunks(seg: SegmentFile) -> Iterator[tuple[np.ndarray, np.ndarray, bool]]:
    """(queue offsets, entries, last) of one file, READ_CHUNK_ENTRIES at a time up to the first entry not written
    (the broker's reading rule), each read when asked for (a reader holds a chunk of each queue, not a file);
    `last` marks the file's last chunk."""
    import numpy as np

    chunk = READ_CHUNK_ENTRIES
    try:
        fd = os.open(seg.path, os.O_RDONLY)
    except OSError as e:
        raise RmqError(f"cannot read {seg.path}: {e.strerror}") from None
    try:
        first = seg.start // consumequeue.ENTRY_LEN
        total = consumequeue.whole_entries(os.fstat(fd).st_size)
        at = 0
        while True:
            want = min(chunk, total - at)
            entries = consumequeue.decode_entries(os.pread(fd, want * consumequeue.ENTRY_LEN,
                                                           at * consumequeue.ENTRY_LEN))
            n = consumequeue.written_count(entries)
            last = n < want or at + want >= total
            yield np.arange(first + at, first + at + n, dtype=np.int64), entries[:n], last
            if last:
                return
            at += want
    finally:
        os.close(fd)


def is_rocksdb(directory: Path) -> bool:
    """A RocksDB database folder: CURRENT names its MANIFEST."""
    return (directory / "CURRENT").is_file() or any(directory.glob("MANIFEST-*"))


def open_queues(paths: StorePaths, file_size: int, log_start: int = 0) -> QueueStore:
    """The consume-queue form the store's files hold (`log_start`: the commitlog's first offset)."""
    if paths.consumequeue.is_dir() and is_rocksdb(paths.consumequeue):
        return RocksQueues(paths.consumequeue)
    return FileQueues(paths, file_size, log_start)
