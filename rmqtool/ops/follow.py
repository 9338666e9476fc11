"""Following a commitlog while it is written (`decode commitlog --follow`), read-only and without the lock.

The writer may be another process: rmqtool's own store, a broker, or a replica that writes the bytes
its master sends, cut at any byte, into a file of zeros. So a record is taken only when it is whole:
the walker (`walker.walk_on`, the scan policy) accepts it and its bytes have arrived, which a reader that
does not know the writer's position tells from the bytes: the file ends there, something was written
after it, or its last byte that is never zero (the last property byte, or of the topic without
properties) is written. A record the walker refuses is a record still arriving until bytes past its
declared end are written: then it is corruption, reported and resynchronized on as the scan does
(`SegmentScanner`). A blank marker or the file's end moves on to the next segment once it exists;
new bytes are looked for every `POLL_SECONDS`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import numpy as np

from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.files.segments import SegmentFile, data_end, list_segments, open_read_only, read_head
from rmqtool.ops.log_rows import STORED, line_rendering, rows_of, selected
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.chunk import ScanChunk
from rmqtool.structures.commitlog.scan import SegmentEnd, SegmentScanner
from rmqtool.structures.commitlog.selection import Selection
from rmqtool.structures.commitlog.walker import Rows, walk_on

POLL_SECONDS = 0.1
_WINDOW = 1 << 20  # bytes a walk covers per call
_WAIT, _END, _CORRUPT = range(3)  # what stops a pass over a segment


def follow_rows(reader: StoreReader, *, from_offset: int | None = None, count: int | None = None,
                selection: Selection | None = None, verify_crc: bool = True, bodies: str = STORED, render=None,
                stop: Callable[[], bool] = lambda: False, poll: float = POLL_SECONDS) -> Iterator:
    """`log_rows` of the records written from `from_offset` on (None: from the log's end now), as they come:
    row batches (or what `render` makes of them) and findings, until `count` records (of those `selection`
    selects) or `stop()`."""
    if count == 0:
        return iter(())
    chunks = follow_chunks(reader, from_offset, verify_crc=verify_crc, stop=stop, poll=poll)
    return rows_of(selected(chunks, count=count, selection=selection), reader.config.delay_levels_ms, bodies=bodies,
                   render=render, workers=1)  # one at a time: a pool would hold rows back until more come


def follow_lines(reader: StoreReader, body: str = "base64", **selection) -> Iterator:
    """`follow_rows` as JSON lines, as `log_lines` makes them."""
    return follow_rows(reader, **line_rendering(body), **selection)


def follow_chunks(reader: StoreReader, from_offset: int | None, *, verify_crc: bool = True,
                  stop: Callable[[], bool] = lambda: False, poll: float = POLL_SECONDS) -> Iterator[ScanChunk]:
    """Scan chunks of the records written from `from_offset` on (None: the log's end now, found here), polling
    every `poll` seconds until `stop()`."""
    if reader.single_file:
        raise RmqError(f"{reader.segments[0].path}: --follow reads a store root, not one segment file")
    if reader.dledger:
        raise RmqError(f"{reader.paths.commitlog}: --follow reads a commitlog, not a DLedger data log")
    return _polled(Tail(reader, from_offset, verify_crc), stop, poll)


def _polled(tail: Tail, stop: Callable[[], bool], poll: float) -> Iterator[ScanChunk]:
    while True:
        yield from tail.advance()
        if stop():
            return
        time.sleep(poll)


class Tail:
    """A position in a commitlog being written, and the records that have arrived past it."""

    def __init__(self, reader: StoreReader, from_offset: int | None, verify_crc: bool = True) -> None:
        self.reader = reader
        self.directory = reader.paths.commitlog
        self.segment_size = reader.segment_size
        self.verify_crc = verify_crc
        self.segments: list[SegmentFile] = []
        self.rows = Rows.room(_WINDOW)
        self.pos = from_offset  # None: the first segment's start, once there is one
        self.aligned = from_offset is None  # an offset given may fall inside a record
        if from_offset is None:
            self.pos = self._newest_start()
            for _ in self.advance(emit=False):  # to the end of what is written now
                pass

    def _newest_start(self) -> int | None:
        """The start of the newest segment holding anything (a writer may have made empty ones ahead)."""
        self.segments = list_segments(self.directory)
        for seg in reversed(self.segments):
            if not message.unwritten(read_head(seg.path, message.reach(0)), 0):
                return seg.start
        return self.segments[0].start if self.segments else None

    def advance(self, emit: bool = True) -> Iterator[ScanChunk]:
        """The whole records (and the corruption) that arrived since the last call; the position moves past them."""
        while True:
            seg = self._holding()
            if seg is None:
                return
            with open_read_only(seg.path) as buf:
                ended = yield from self._segment(buf, seg, emit)
            if not ended:
                return
            later = self._after(seg)
            if later is None:
                return
            self.pos = max(self.pos, later.start)

    def _holding(self) -> SegmentFile | None:
        """The segment the position is in (the first one after it when it is in none)."""
        if not self.segments:
            self.segments = list_segments(self.directory)
        if not self.segments:
            return None
        if self.pos is None:
            self.pos = self.segments[0].start
        before = [s for s in self.segments if s.start <= self.pos]
        if before:
            return before[-1]
        self.pos, self.aligned = self.segments[0].start, True
        return self.segments[0]

    def _after(self, seg: SegmentFile) -> SegmentFile | None:
        """The segment after `seg`, listing the directory again when none is known yet."""
        later = [s for s in self.segments if s.start > seg.start]
        if not later:
            self.segments = list_segments(self.directory)
            later = [s for s in self.segments if s.start > seg.start]
        return later[0] if later else None

    def _segment(self, buf, seg: SegmentFile, emit: bool):
        """Yield the chunks of `seg` from the position to where its records stop for now; return whether the
        segment has ended there (a blank marker, the file's end)."""
        arr = np.frombuffer(buf, dtype=np.uint8)
        at = self.pos - seg.start
        if not self.aligned:
            at = self._record_start(buf, seg, at)
            if at is None:
                return False
            self.aligned = True
        while True:
            stop, why = self._whole_until(arr, seg, at)
            if emit and stop > at:
                yield from self._chunks(buf, seg, at, stop)
            at = stop
            self.pos = seg.start + at
            if why != _CORRUPT:
                return why == _END
            resumed = yield from self._resync(buf, seg, at, emit)
            if resumed is None:
                return False
            if resumed >= len(buf):
                self.pos = seg.start + len(buf)
                return True
            at = resumed

    def _record_start(self, buf, seg: SegmentFile, at: int) -> int | None:
        """Where the first record at or after `at` starts, as a scan from there finds it; None while unknown."""
        if at >= len(buf) or message.unwritten(buf, at):
            return at if at == 0 or at >= len(buf) else None
        found = self.reader._first_record_at(buf, seg, at, data_end(seg.path))
        return found if found < len(buf) else None

    def _whole_until(self, arr: np.ndarray, seg: SegmentFile, at: int) -> tuple[int, int]:
        """Where the whole records from `at` stop, and why (_WAIT, _END or _CORRUPT)."""
        last = None
        for step in walk_on(arr, at, None, seg.start, self.rows, window=_WINDOW):
            if step.count:
                last = self.rows[step.count - 1 : step.count].copy()
        if last is not None and not _arrived(arr, last):
            return int(last.start[0]), _WAIT
        if step.blank and step.stop + message.total_size(arr, step.stop) < len(arr):
            return step.stop, _CORRUPT  # an end marker short of its segment's end: records lost behind it
        if step.blank or step.file_end:
            return step.stop, _END
        return step.stop, _CORRUPT if self._written_past(arr, step.stop) else _WAIT

    def _written_past(self, arr: np.ndarray, at: int) -> bool:
        """Whether bytes past the declared end of the record the walker refused at `at` are written (the
        end of its totalSize and magic when the size is not one a record can have)."""
        total = message.total_size(arr, at)
        room = max(len(arr), self.segment_size) - at
        end = message.declared_end(at, total, room)
        return end == len(arr) or (end < len(arr) and not message.unwritten(arr, end))

    def _chunks(self, buf, seg: SegmentFile, at: int, stop: int) -> Iterator[ScanChunk]:
        """The records in [at, stop) of `seg` (all whole) through the scanner: columns, CRC findings."""
        scanner = SegmentScanner(buf, seg.start, str(seg.path), verify_crc=self.verify_crc, start=at, limit=stop)
        for item in scanner.batches():
            found, scanner.findings = scanner.findings, []
            if not isinstance(item, SegmentEnd):
                yield ScanChunk(item, found)
            elif found:
                yield ScanChunk(None, found)

    def _resync(self, buf, seg: SegmentFile, at: int, emit: bool):
        """Report the damaged record at `at` as the scan does and return where the scan goes on (the file's
        length: nowhere in this segment); None to wait, while no record after it is there to go on at."""
        scanner = SegmentScanner(buf, seg.start, str(seg.path), verify_crc=self.verify_crc, start=at,
                                 data_end=data_end(seg.path), limit=at + 1)
        items = [item for item in scanner.batches() if not isinstance(item, SegmentEnd)]
        end = scanner.end
        if end.in_zeros and self._after(seg) is None:
            return None
        if emit:
            yield ScanChunk(items[0] if items else None, scanner.findings)
        return end.pos if end.at_limit else len(buf)


def _arrived(arr: np.ndarray, row: Rows) -> bool:
    """Whether the record the walker accepted (its one geometry `row`) has arrived whole: the file ends with
    it, bytes after it are written, or its last byte that is never zero is."""
    props_len, topic_len = int(row.props_len[0]), int(row.topic_len[0])
    end = row.end_of(0)
    last = end - 1 if props_len or not topic_len else int(row.topic[0]) + topic_len - 1
    return end >= len(arr) or not message.unwritten(arr, end) or bool(arr[last])
