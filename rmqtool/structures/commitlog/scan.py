"""The columnar commitlog scanner: record boundaries and fixed fields for many records at once.

A segment is walked front to back in windows. A compiled walk (`kernels.walk`) follows
totalSize from record to record while each record is a well-formed message whose
physicalOffset field equals its own position; the fixed fields of all records it passed
are then pulled as numpy columns in one gather. Where the walk stops (blank marker, zeros,
a torn or corrupt record) the per-record decoder classifies the bytes, so both paths share
one codec. With `verify_crc` the columns of each window are checked too: a body CRC that does not match, or
fields the CRC does not cover that no broker writes (`impossible`: a negative queueId, an impossible
queueOffset, properties torn by NUL bytes), make the record damage over its totalSize, and the scan goes on
after it. Corruption becomes a `Finding` and the scan resynchronizes on the next position
that holds the magic code and its own offset (a vectorized search): it never raises on
bad bytes. An end marker closes a segment only where it reaches the file's end with no record
after it; one in the middle (records lost behind it) is a finding, and the scan goes on.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING

import numpy as np

from rmqtool.report import ERROR, Finding
from rmqtool.structures import jit
from rmqtool.structures.commitlog import impossible, kernels, message, sysflag
from rmqtool.structures.commitlog.crc import POSITIVE_MASK
from rmqtool.structures.commitlog.message import (
    MAGIC_OFFSET,
    MAGIC_V1,
    MAGIC_V2,
    MIN_RECORD_LEN,
    PHYSICAL_OFFSET_OFFSET,
    Blank,
)
from rmqtool.structures.commitlog.walker import Rows
from rmqtool.structures.commitlog.workers import scan_threads, submit

if TYPE_CHECKING:  # start-up: Arrow loads only where the properties are read
    import pyarrow as pa

WINDOW_BYTES = 8 << 20
_SEARCH_CHUNK = 1 << 18  # keeps the byte comparison in cache
_MAGIC_BYTE0 = (MAGIC_V1 >> 24) & 0xFF  # the first two bytes are shared by v1 and v2 magic codes
_MAGIC_BYTE1 = (MAGIC_V1 >> 16) & 0xFF
_HOST_V6_BITS = sysflag.BORN_HOST_V6 | sysflag.STORE_HOST_V6
_V4_DTYPE = message.header_dtype(False, False)
_V4_HEADER = f"V{_V4_DTYPE.itemsize}"
# Finding kinds of a scan. A record whose size field is sound but whose content is not is one of
# `_SIZED_KINDS` (by its reason's start), a CRC mismatch or one of `impossible.KINDS`; where the scan lost the
# record boundaries it reports a corrupt region up to the next record, or garbage up to the end of the data.
CRC_MISMATCH = "crc-mismatch"
ZERO_GAP = "zero-gap"
CORRUPT_REGION = "corrupt-region"
GARBAGE_TAIL = "garbage-tail"
MISPLACED_BLANK = "misplaced-blank"  # an end marker that does not close the segment: records after it skipped
LOST_TAIL = "lost-tail"  # a segment's records stop in zeros or at a cut, and later segments hold records
_SIZED_KINDS = {"physicalOffset": "physical-offset-mismatch", "record length mismatch": "record-length-mismatch"}
_SIZED_REASONS = tuple(_SIZED_KINDS)  # the size field itself is sound

END_BLANK = "blank"  # a blank marker closes the segment
END_ZEROS = "zeros"  # the rest of the segment is zeros: the end of the log
END_FILE = "eof"  # the last record ends exactly at the end of the file
END_LIMIT = "limit"  # the scan reached the position it was asked to stop at


def _strided(buf, dtype: str | np.dtype) -> np.ndarray:
    """A view of `buf` with one element starting at every byte (for unaligned gathers).

    Built on the raw buffer, not on a numpy array over it: gathers from the latter are
    several times slower.
    """
    dt = np.dtype(dtype)
    n = max(len(buf) - dt.itemsize + 1, 0)
    return np.ndarray(shape=(n,), dtype=dt, buffer=buf, offset=0, strides=(1,))


class Columns(Mapping):
    """Fixed header fields of many records, converted to native-endian arrays on first use."""

    def __init__(self, raw: np.ndarray) -> None:
        self.raw = raw  # big-endian structured rows (IPv4 layout; other layouts patched in)
        self._cache: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        col = self._cache.get(name)
        if col is None:
            if name not in _COLUMN_FIELDS:
                raise KeyError(name)
            field_raw = self.raw[name]
            col = self._cache[name] = field_raw.astype(field_raw.dtype.newbyteorder("="))
        return col

    def __iter__(self) -> Iterator[str]:
        return iter(_COLUMN_FIELDS)

    def __len__(self) -> int:
        return len(_COLUMN_FIELDS)

    def select(self, rows: np.ndarray) -> Columns:
        """The columns of `rows` (indexes, ascending). The header rows are taken as opaque bytes: a take of
        the structured rows copies field by field, ten times slower."""
        out = Columns(self.raw.view(f"V{self.raw.dtype.itemsize}").take(rows).view(self.raw.dtype))
        out._cache = {k: v.take(rows) for k, v in self._cache.items()}
        return out


@dataclass
class RecordBatch:
    """Columns of consecutive good records of one segment (native-endian numpy arrays)."""

    file: str
    base: int
    buf: object
    pos: np.ndarray  # record start within the segment
    cols: Columns
    body_pos: np.ndarray
    topic_pos: np.ndarray
    topic_len: np.ndarray
    props_pos: np.ndarray
    props_len: np.ndarray
    _topics: tuple[np.ndarray, list[str]] | None = field(default=None, repr=False)
    _bodies: list[bytes] | None = field(default=None, repr=False)
    # a numpy view of the segment: while the batch lives, the map cannot be closed under it
    pin: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.pos)

    @property
    def offsets(self) -> np.ndarray:
        return self.pos + self.base

    def geometry(self) -> Rows:
        """The walk's rows for these records, for the compiled passes."""
        return Rows.of(self.pos, self.body_pos, self.topic_pos, self.topic_len, self.props_pos, self.props_len)

    def topics(self) -> tuple[np.ndarray, list[str]]:
        """(topic id per record, topic names): each distinct topic is decoded once."""
        if self._topics is None:
            self._topics = group_strings(self.buf, self.topic_pos, self.topic_len)
        return self._topics

    def topic_names(self) -> list[str]:
        ids, names = self.topics()
        return [names[i] for i in ids.tolist()]

    def bodies(self) -> list[bytes]:
        if self._bodies is None:
            self._bodies = _slices(self.buf, self.body_pos, self.cols["bodyLength"])
        return self._bodies

    def properties_array(self) -> pa.LargeStringArray:
        """Each record's properties string (UTF-8, bad bytes replaced) as one Arrow string array: the bytes
        copied once into its data buffer, no Python string per record. Text that is not valid UTF-8 (rare)
        is decoded record by record."""
        import pyarrow as pa  # start-up: Arrow loads only for a command that reads the properties

        data, offsets = kernels.gathered(np.frombuffer(self.buf, dtype=np.uint8), self.props_pos, self.props_len)
        array = pa.LargeStringArray.from_buffers(len(self), pa.py_buffer(offsets), pa.py_buffer(data))
        if not len(data) or data.max() < 0x80:  # ASCII, the common case, is UTF-8
            return array
        try:
            array.validate(full=True)  # UTF-8 checked
            return array
        except pa.ArrowInvalid:
            return pa.array([r.decode("utf-8", "replace") for r in _slices(self.buf, self.props_pos, self.props_len)],
                            pa.large_string())

    def properties_containing(self, text: str) -> list[int]:
        """The rows whose properties string holds `text` (a plain substring, not a pattern)."""
        import pyarrow.compute as pc  # start-up: as properties_array

        found = pc.match_substring(self.properties_array(), text)
        return np.flatnonzero(found.to_numpy(zero_copy_only=False)).tolist()

    def body_crcs(self) -> np.ndarray:
        """java.util.zip.CRC32 of every body, masked positive as the store records it."""
        arr = np.frombuffer(self.buf, dtype=np.uint8)
        return kernels.body_crcs(arr, self.body_pos, self.cols["bodyLength"]) & POSITIVE_MASK

    def select(self, mask: np.ndarray) -> RecordBatch:
        """The records where `mask` is set, taken by index (faster than a boolean index of every column)."""
        rows = np.flatnonzero(mask)
        return RecordBatch(
            self.file, self.base, self.buf, self.pos.take(rows), self.cols.select(rows),
            self.body_pos.take(rows), self.topic_pos.take(rows), self.topic_len.take(rows), self.props_pos.take(rows),
            self.props_len.take(rows), pin=self.pin,
        )

    def message(self, i: int) -> message.Message:
        """Record `i` through the per-record decoder (the scanner already validated it)."""
        p = int(self.pos[i])
        rec = message.decode(self.buf, p, verify_crc=False)
        assert isinstance(rec, message.Message)
        return rec


@dataclass
class SegmentEnd:
    """Where and how the records of a segment end."""

    file: str
    base: int
    pos: int  # first byte after the last record (or of the blank marker)
    kind: str  # END_BLANK, END_ZEROS, END_FILE or END_LIMIT

    @property
    def at_blank(self) -> bool:
        """The segment's end marker closes it."""
        return self.kind == END_BLANK

    @property
    def in_zeros(self) -> bool:
        """Zeros (or garbage no record follows) up to the segment's end: where the log ends."""
        return self.kind == END_ZEROS

    @property
    def at_file_end(self) -> bool:
        return self.kind == END_FILE

    @property
    def at_limit(self) -> bool:
        """The scan reached the position it was asked to stop at."""
        return self.kind == END_LIMIT


def lost_tail(end: SegmentEnd, segment_size: int) -> Finding:
    """The finding for a segment whose records stop in zeros (or at a cut) with no end marker while later
    segments hold records: the log's data should have gone on to the segment's end."""
    lost = max(segment_size - end.pos, 0)
    return Finding(end.file, end.base + end.pos, f"records stop at offset {end.base + end.pos}, {lost} bytes before "
                   "the segment's end, without an end marker while later segments hold records", lost, ERROR,
                   kind=LOST_TAIL)


def _length_groups(lengths: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(length, indices) for each distinct length, indices in ascending order."""
    if not len(lengths):  # a window whose every record was damage
        return
    if (lengths == lengths[0]).all():
        yield int(lengths[0]), np.arange(len(lengths))
        return
    order = np.argsort(lengths, kind="stable")
    sorted_len = lengths[order]
    cuts = np.flatnonzero(np.diff(sorted_len)) + 1
    for group in np.split(order, cuts):
        yield int(lengths[group[0]]), group


def _fixed_slices(buf, starts: np.ndarray, length: int) -> Iterator[bytes]:
    """arr[s:s+length] for each s, as bytes, produced by one gather and a C-level split."""
    if length == 0:
        return iter([b""] * len(starts))
    packed = _strided(buf, f"V{length}")[starts].tobytes()
    return map(itemgetter(0), struct.iter_unpack(f"{length}s", packed))


def _slices(buf, starts: np.ndarray, lengths: np.ndarray) -> list[bytes]:
    """buf[start:start+len] for every record, in record order."""
    pieces: list[bytes] = []
    order = []
    for length, idx in _length_groups(lengths):
        pieces.extend(_fixed_slices(buf, starts[idx], length))
        order.append(idx)
    if len(order) <= 1:
        return pieces
    where = np.empty(len(starts), dtype=np.int64)
    where[np.concatenate(order)] = np.arange(len(starts))
    return [pieces[i] for i in where.tolist()]


def group_strings(buf, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Distinct byte strings among buf[start:start+len] and each record's index into them."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype=np.int64), []
    arr = np.frombuffer(buf, dtype=np.uint8)
    starts, lengths = np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    few = _few_strings(arr, starts, lengths)
    return few if few is not None else _hashed_strings(buf, starts, lengths)


def _hashed_strings(buf, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """`group_strings` of any number of strings: grouped by hash (by their bytes where two share a hash), in
    hash order."""
    n = len(starts)
    arr = np.frombuffer(buf, dtype=np.uint8)
    hashes = np.empty(n, dtype=np.uint64)
    kernels.string_hashes(arr, starts, lengths, hashes)
    if (hashes == hashes[0]).all():  # one topic: the common case
        first, inverse = np.zeros(1, dtype=np.int64), np.zeros(n, dtype=np.int64)
    else:
        _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    inverse = inverse.ravel().astype(np.int64)
    if not kernels.strings_match(arr, starts, lengths, first[inverse]):  # a hash collision: group by the bytes
        _, first, inverse = np.unique(_padded_keys(buf, starts, lengths), return_index=True, return_inverse=True)
        inverse = inverse.ravel().astype(np.int64)
    names = [bytes(arr[int(starts[i]) : int(starts[i] + lengths[i])]).decode("utf-8", "replace") for i in first]
    return inverse, names


def _few_strings(arr: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, list[str]] | None:
    """`group_strings` for a batch of at most `_FEW` distinct strings (a log's topics): grouped by their bytes in
    one pass, then ordered by hash as the general path orders them. None when there are more, or two of them
    share a hash."""
    first, ids = np.empty(_FEW, dtype=np.int64), np.empty(len(starts), dtype=np.int64)
    groups = kernels.group_equal(arr, starts, lengths, first, ids)
    if groups < 0:
        return None
    first = first[:groups]
    hashes = np.empty(groups, dtype=np.uint64)
    kernels.string_hashes(arr, starts[first], lengths[first], hashes)
    order = np.argsort(hashes, kind="stable")
    if groups > 1 and not (np.diff(hashes[order]) != 0).all():
        return None
    rank = np.empty(groups, dtype=np.int64)
    rank[order] = np.arange(groups)
    names = [bytes(arr[int(starts[i]) : int(starts[i] + lengths[i])]).decode("utf-8", "replace") for i in first[order]]
    return rank[ids], names


_FEW = 64


def _padded_keys(buf, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each string zero-padded to the longest, with its length appended, as one void value."""
    n, width = len(starts), max(int(lengths.max()), 1)
    size = len(buf)
    rows = np.zeros((n, width), dtype=np.uint8)
    inside = starts + width <= size
    if inside.any():
        rows[inside] = _strided(buf, f"V{width}")[starts[inside]].view(np.uint8).reshape(-1, width)
    for i in np.flatnonzero(~inside).tolist():  # the last bytes of a file: copy by hand
        s = int(starts[i])
        tail = bytes(buf[s:])
        rows[i, : len(tail)] = np.frombuffer(tail, dtype=np.uint8)
    rows[np.arange(width) >= lengths[:, None]] = 0
    keyed = np.hstack([rows, lengths.astype(">u2").view(np.uint8).reshape(n, 2)])
    return keyed.view(f"V{width + 2}").ravel()


def _geometry(start: int, rec: message.Message) -> np.ndarray:
    """The walk's geometry row for a record the per-record decoder accepted."""
    topic_len = len(rec.topic.encode())
    props_len = len(rec.properties_string.encode())
    body = start + message.header_len(rec.sys_flag)
    topic = body + len(rec.body) + message.topic_len_size(rec.magic)
    return np.array([[start, body, topic, topic_len, start + rec.store_size - props_len, props_len]], dtype=np.int64)


class SegmentScanner:
    """Walks one segment buffer; `batches()` yields RecordBatch objects, then one SegmentEnd."""

    def __init__(self, buf, base: int, file: str, *, verify_crc: bool = True, start: int = 0,
                 window: int | None = None, data_end: int | None = None, limit: int | None = None,
                 threads: int | None = None) -> None:
        self.buf = buf
        self.base = base
        self.file = file
        self.verify_crc = verify_crc
        self.start = start
        self.window = window or WINDOW_BYTES
        self.arr = np.frombuffer(buf, dtype=np.uint8)
        self.limit = len(self.arr) if limit is None else min(limit, len(self.arr))  # no record starts past it
        # bytes from data_end on are known to be zeros (a hole of a sparse file)
        self.data_end = len(self.arr) if data_end is None else min(data_end, len(self.arr))
        self.i4 = _strided(buf, ">i4")
        self.i8 = _strided(buf, ">i8")
        self.threads = scan_threads() if threads is None else max(threads, 1)
        self.findings: list[Finding] = []  # what the scan met up to the item it yielded last
        self._found: list[Finding] = []  # what the walk met since the last window it handed out
        self.end: SegmentEnd | None = None

    # -- the walk ------------------------------------------------------------------------------
    def batches(self) -> Iterator[RecordBatch | SegmentEnd]:
        """The segment's good records window by window, in log order, then its SegmentEnd. Before each item
        is yielded, `findings` has gained what the scan met up to it (in log order, a window's CRC mismatches
        after what its walk met).

        The walk runs here; each window's columns and CRCs are worked on by `threads` workers, at most
        threads + 1 windows in flight."""
        size = len(self.arr)
        pos = self.start
        out = Rows.room(self.window).table
        pending: deque[tuple[Future[tuple[RecordBatch, list[Finding]]], list[Finding]]] = deque()
        carried: list[Finding] = []  # findings of windows without a good record go with the next item
        try:
            while self.end is None:
                if pos >= size:
                    self.end = SegmentEnd(self.file, self.base, pos, END_FILE)
                    break
                if pos >= self.limit:
                    self.end = SegmentEnd(self.file, self.base, pos, END_LIMIT)
                    break
                hi = min(pos + self.window, self.limit)
                runs: list[np.ndarray] = []
                while pos < hi and self.end is None:
                    count, pos, why = self._walk(pos, hi, out)
                    if count:
                        runs.append(out[:count].copy())
                    if pos < hi:
                        pos = self._resume(pos, why, runs)
                found, self._found = carried + self._found, []
                if not runs:
                    carried = found
                    continue
                carried = []
                geo = np.concatenate(runs) if len(runs) > 1 else runs[0]
                pending.append((submit(self.threads, self._columns, geo), found))
                while len(pending) > (self.threads if self.threads > 1 else 0):
                    yield self._publish(*pending.popleft())
            while pending:
                yield self._publish(*pending.popleft())
            self.findings.extend(carried + self._found)
            self._found = []
            yield self.end
        finally:  # a consumer that stops early: windows still in work end before the map may close
            for job, _ in pending:
                if not job.cancel():
                    job.exception()

    def _publish(self, job: Future[tuple[RecordBatch, list[Finding]]], found: list[Finding]) -> RecordBatch:
        """A window's batch, its walk's findings and then its CRC findings added to `findings`."""
        batch, crc_found = job.result()
        self.findings.extend(found)
        self.findings.extend(crc_found)
        return batch

    def _walk(self, pos: int, hi: int, out: np.ndarray) -> tuple[int, int, int]:
        """The compiled walk from `pos`: (rows written to `out`, stop position, kernels.STOP_*)."""
        count, stop, why, _ = kernels.walk(self.arr, pos, hi, self.base, out, kernels.POLICY_SCAN, False)
        return count, stop, why

    def _resume(self, pos: int, why: int, runs: list[np.ndarray]) -> int:
        """After the walk stopped short at `pos`: classify what is there, keep a good record, and say
        where to go on (or end the segment)."""
        here = pos
        pos, rec = self._slow_step(pos)
        if rec is not None:
            runs.append(_geometry(here, rec))
        return pos

    def _slow_step(self, pos: int) -> tuple[int, message.Message | None]:
        """Classify the bytes at `pos` with the per-record decoder.

        Returns where to go on, and the record at `pos` when it is a good one to keep.
        """
        rec = message.decode(self.buf, pos, verify_crc=False, expected_offset=self.base + pos)
        if isinstance(rec, Blank):
            return self._blank(pos, rec.size), None
        if isinstance(rec, message.Message):
            return pos + rec.store_size, rec
        size = len(self.arr)
        if not self.arr[pos : max(self.data_end, pos)].any():  # zeros to the data's end: the unwritten tail (a
            self.close_in_zeros(pos)  # zero-filled segment's too), with no record start to search for in it
            return size, None
        next_start = self.next_record_start(pos + 1)
        stop = next_start if next_start is not None else size
        if not self.arr[pos : min(stop, max(self.data_end, pos))].any():
            if next_start is None:
                self.close_in_zeros(pos)
            else:
                self._report(pos, "zero-filled gap before the next record", stop - pos, ZERO_GAP)
            return stop, None
        if rec.reason.startswith(_SIZED_REASONS) and (next_start is None or pos + rec.length <= next_start):
            kind = next(k for start, k in _SIZED_KINDS.items() if rec.reason.startswith(start))
            self._report(pos, rec.reason, rec.length, kind)
            return pos + rec.length, None
        if next_start is None:
            garbage = int(np.flatnonzero(self.arr[pos : max(self.data_end, pos + 1)])[-1]) + 1
            self._report(pos, f"{rec.reason}; no record follows", garbage, GARBAGE_TAIL)
            self.close_in_zeros(pos)
            return size, None
        self._report(pos, f"{rec.reason}; skipped to the next record", stop - pos, CORRUPT_REGION)
        return stop, None

    def _blank(self, pos: int, size: int) -> int:
        """An end marker at `pos` closes the segment when its size reaches the file's end (or past it: a cut
        file) and no record follows it. Otherwise the records after it are cut off from the log: reported, and
        the scan goes on at the next record after it (or ends the segment there)."""
        left = len(self.arr) - pos
        after = self.next_record_start(pos + message.BLANK_MARKER_LEN)
        if after is None:
            if size < left:
                self._report(pos, f"end-of-segment marker {size} bytes long where {left} bytes remain; the rest of "
                                  "the segment skipped", left, MISPLACED_BLANK)
            self.close_at_blank(pos)
            return pos
        self._report(pos, f"end-of-segment marker where records go on (it says {size} bytes are unused, {left} "
                          "remain); skipped to the next record", after - pos, MISPLACED_BLANK)
        return after

    def close_at_blank(self, pos: int) -> None:
        """End the segment at the end marker at `pos`."""
        self.end = SegmentEnd(self.file, self.base, pos, END_BLANK)

    def close_in_zeros(self, pos: int) -> None:
        """End the segment at `pos`: zeros (or garbage no record follows) from there on."""
        self.end = SegmentEnd(self.file, self.base, pos, END_ZEROS)

    def next_record_start(self, lo: int) -> int | None:
        """The first position >= lo holding a message magic, a plausible size and its own
        offset (where a scan resynchronizes after corruption); None when there is none."""
        while lo < self.data_end:
            hi = min(lo + self.window, self.data_end)
            found = self._candidates(lo, hi)
            if found.size:
                return int(found[0])
            lo = hi
        return None

    def _candidates(self, lo: int, hi: int) -> np.ndarray:
        """Positions in [lo, hi) that could start a record: the magic code at byte 4, then
        confirmed by a plausible totalSize and a physicalOffset field equal to the position."""
        arr, size = self.arr, len(self.arr)
        found = []
        top = min(hi + MAGIC_OFFSET, size - 1)
        for c0 in range(lo + MAGIC_OFFSET, top, _SEARCH_CHUNK):
            c1 = min(c0 + _SEARCH_CHUNK, top)
            hit = arr[c0:c1] == _MAGIC_BYTE0
            hit &= arr[c0 + 1 : c1 + 1] == _MAGIC_BYTE1
            where = np.flatnonzero(hit)
            if where.size:
                found.append(where + (c0 - MAGIC_OFFSET))
        if not found:
            return np.zeros(0, dtype=np.int64)
        c = np.concatenate(found)
        c = c[c + MIN_RECORD_LEN <= size]
        magic = self.i4[c + MAGIC_OFFSET]
        c = c[(magic == MAGIC_V1) | (magic == MAGIC_V2)]
        c = c[self.i8[c + PHYSICAL_OFFSET_OFFSET] == c + self.base]
        total = self.i4[c]
        return c[(total >= MIN_RECORD_LEN) & (total <= size - c)]

    def _report(self, pos: int, reason: str, nbytes: int, kind: str, severity: str = ERROR) -> None:
        """A finding of the walk (the calling thread's)."""
        self._found.append(self._finding(pos, reason, nbytes, kind, severity))

    def _finding(self, pos: int, reason: str, nbytes: int, kind: str, severity: str = ERROR) -> Finding:
        return Finding(self.file, self.base + pos, reason, int(nbytes), severity, kind=kind)

    def _headers(self, starts: np.ndarray) -> np.ndarray:
        """Writable big-endian header rows (IPv4 layout) at `starts`; zero-padded at the file end."""
        head = _strided(self.buf, _V4_HEADER)
        inside = starts < len(head)
        if inside.all():
            return head[starts].view(_V4_DTYPE)
        rows = np.zeros(len(starts), dtype=_V4_DTYPE)
        rows[inside] = head[starts[inside]].view(_V4_DTYPE)
        for i in np.flatnonzero(~inside).tolist():
            tail = bytes(self.buf[int(starts[i]) :])
            rows[i : i + 1].view(np.uint8)[: len(tail)] = np.frombuffer(tail, dtype=np.uint8)
        return rows

    # -- columns ---------------------------------------------------------------------------
    def _columns(self, geo: np.ndarray) -> tuple[RecordBatch, list[Finding]]:
        """A batch of the records whose geometry rows are `geo` (already validated), its columns converted and
        topics grouped, and the findings of the records whose body CRC does not match or whose fields no broker
        writes (`impossible`; both asked with `verify_crc`, the records left out of the batch). Runs on a worker."""
        starts = geo[:, 0]
        raw = self._headers(starts)
        for i in np.flatnonzero((raw["sysFlag"] & _HOST_V6_BITS) != 0).tolist():
            self._fill_v6(int(starts[i]), i, raw)  # IPv6 hosts: through the struct codec
        batch = RecordBatch(self.file, self.base, self.buf, starts, Columns(raw), geo[:, 1], geo[:, 2], geo[:, 3],
                            geo[:, 4], geo[:, 5], pin=self.arr)
        found: list[Finding] = []
        if self.verify_crc:  # a record's one finding: its body CRC first, then the fields no broker writes
            crc, stored, total = batch.body_crcs(), batch.cols["bodyCRC"], batch.cols["totalSize"]
            drop = crc != stored
            named = {i: (CRC_MISMATCH, f"body CRC mismatch: stored {int(stored[i])}, computed {int(crc[i])}")
                     for i in np.flatnonzero(drop).tolist()}
            for i, kind, reason in self._impossible(batch):
                named.setdefault(i, (kind, reason))
            if named:
                for i in sorted(named):
                    kind, reason = named[i]
                    found.append(self._finding(int(starts[i]), reason, int(total[i]), kind))
                drop[list(named)] = True
                batch = batch.select(~drop)
        batch.topics()
        for name in batch.cols:  # native-endian columns, made here rather than on the consumer's thread
            batch.cols[name]
        return batch, found

    def _impossible(self, batch: RecordBatch) -> list[tuple[int, str, str]]:
        """(index, kind, reason) of the batch's records no broker writes (`impossible`), whatever their body CRC:
        the header rules on its columns, the NUL bytes of the properties fields (those bytes only) in one compiled
        pass."""
        n = len(batch)
        first, count = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        props_pos = batch.props_pos.astype(np.int64)
        kernels.nul_bytes(self.arr, props_pos, batch.props_len.astype(np.int64), first, count)
        cols = batch.cols
        return impossible.judge(cols["queueId"], cols["queueOffset"], batch.offsets, cols["sysFlag"],
                                props_pos + self.base, batch.props_len, first, count)

    def _fill_v6(self, start: int, i: int, raw: np.ndarray) -> None:
        flags = int(raw["sysFlag"][i])
        st = message.HEADER_STRUCTS[(sysflag.born_host_v6(flags), sysflag.store_host_v6(flags))]
        values = dict(zip(_ALL_FIELDS, st.unpack_from(self.buf, start), strict=True))
        for name in _COLUMN_FIELDS:
            raw[name][i] = values[name]


_ALL_FIELDS = [name for name, _ in message.header_fields(False, False)]
_COLUMN_FIELDS = [n for n in _ALL_FIELDS if not n.endswith("Address")]


def foresee_scan(nbytes: int) -> None:
    """Tell the kernels a scan of `nbytes` of log is coming (`jit.foresee`): a big one compiles them at once."""
    jit.foresee(kernels.walk_work(nbytes))


def scan_buffer(buf, base: int = 0, file: str = "", *, verify_crc: bool = True,
                start: int = 0) -> tuple[list[RecordBatch], SegmentEnd, list[Finding]]:
    """Scan one whole segment buffer; convenient for tests and small files."""
    scanner = SegmentScanner(buf, base, file, verify_crc=verify_crc, start=start)
    batches, end = [], None
    for item in scanner.batches():
        if isinstance(item, SegmentEnd):
            end = item
        else:
            batches.append(item)
    assert end is not None
    return batches, end, scanner.findings

