"""The columnar commitlog scanner: record boundaries and fixed fields for many records at once.

A segment is walked front to back in windows. Candidate record starts are found with a
vectorized search for the magic code at byte 4 and confirmed by the physicalOffset field,
which every record carries and which must equal the record's own position. Runs of
candidates that chain (start + totalSize = next start) are taken whole; anything else
(blank marker, zeros, torn or corrupt bytes) goes through the per-record decoder, so both
paths share one codec. Corruption becomes a `Finding` and the scan resynchronizes on the
next confirmed record: it never raises on bad bytes.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from rmqtool.format import message, sysflag
from rmqtool.format.crc import POSITIVE_MASK
from rmqtool.format.finding import ERROR, Finding
from rmqtool.format.message import (
    MAGIC_OFFSET,
    MAGIC_V1,
    MAGIC_V2,
    MIN_RECORD_LEN,
    PHYSICAL_OFFSET_OFFSET,
    Blank,
    Corrupt,
)

WINDOW_BYTES = 32 << 20
_SEARCH_CHUNK = 1 << 18  # keeps the byte comparison in cache
_MAGIC_FIRST_BYTE = (MAGIC_V1 & 0xFFFFFFFF) >> 24  # shared by v1 and v2 magic codes
_HOST_V6_BITS = sysflag.BORN_HOST_V6 | sysflag.STORE_HOST_V6
_SIZED_REASONS = ("physicalOffset", "record length mismatch")  # the size field itself is sound

END_BLANK = "blank"  # a blank marker closes the segment
END_ZEROS = "zeros"  # the rest of the segment is zeros: the end of the log
END_FILE = "eof"  # the last record ends exactly at the end of the file


def _strided(arr: np.ndarray, dtype: str | np.dtype) -> np.ndarray:
    """A view with one element starting at every byte of `arr` (for unaligned gathers)."""
    dt = np.dtype(dtype)
    n = max(len(arr) - dt.itemsize + 1, 0)
    return np.ndarray(shape=(n,), dtype=dt, buffer=arr, offset=0, strides=(1,))


@dataclass
class RecordBatch:
    """Columns of consecutive good records of one segment (native-endian numpy arrays)."""

    file: str
    base: int
    buf: object
    pos: np.ndarray  # record start within the segment
    cols: dict[str, np.ndarray]
    body_pos: np.ndarray
    topic_pos: np.ndarray
    topic_len: np.ndarray
    props_pos: np.ndarray
    props_len: np.ndarray
    _topics: tuple[np.ndarray, list[str]] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.pos)

    @property
    def offsets(self) -> np.ndarray:
        return self.pos + self.base

    def topics(self) -> tuple[np.ndarray, list[str]]:
        """(topic id per record, topic names): each distinct topic is decoded once."""
        if self._topics is None:
            self._topics = _group_strings(self.buf, self.topic_pos, self.topic_len)
        return self._topics

    def topic_names(self) -> list[str]:
        ids, names = self.topics()
        return [names[i] for i in ids.tolist()]

    def bodies(self) -> list[bytes]:
        return _slices(self.buf, self.body_pos, self.cols["bodyLength"])

    def properties_strings(self) -> list[str]:
        raw = _slices(self.buf, self.props_pos, self.props_len)
        return [r.decode("utf-8", "replace") for r in raw]

    def body_crcs(self) -> np.ndarray:
        crc = np.fromiter(map(zlib.crc32, self.bodies()), dtype=np.int64, count=len(self))
        return crc & POSITIVE_MASK

    def select(self, mask: np.ndarray) -> RecordBatch:
        return RecordBatch(
            self.file, self.base, self.buf, self.pos[mask], {k: v[mask] for k, v in self.cols.items()},
            self.body_pos[mask], self.topic_pos[mask], self.topic_len[mask], self.props_pos[mask],
            self.props_len[mask],
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
    kind: str  # END_BLANK, END_ZEROS or END_FILE


def _slices(buf, starts: np.ndarray, lengths: np.ndarray) -> list[bytes]:
    ends = starts + lengths
    return list(map(buf.__getitem__, map(slice, starts.tolist(), ends.tolist())))


def _group_strings(buf, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Distinct byte strings among buf[start:start+len] and each record's index into them."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype=np.int64), []
    width = max(int(lengths.max()), 1)
    arr = np.frombuffer(buf, dtype=np.uint8)
    limit = len(arr) - width
    rows = np.zeros((n, width), dtype=np.uint8)
    inside = starts <= limit
    if inside.any():
        rows[inside] = _strided(arr, f"V{width}")[starts[inside]].view(np.uint8).reshape(-1, width)
    for i in np.flatnonzero(~inside).tolist():  # the last bytes of a segment: copy by hand
        s = int(starts[i])
        rows[i, : len(arr) - s] = arr[s:]
    rows[np.arange(width) >= lengths[:, None]] = 0
    keyed = np.hstack([rows, lengths.astype(">u2").view(np.uint8).reshape(n, 2)])
    uniq, first, inverse = np.unique(
        keyed.view(f"V{width + 2}").ravel(), return_index=True, return_inverse=True
    )
    names = [bytes(buf[int(starts[i]) : int(starts[i] + lengths[i])]).decode("utf-8", "replace") for i in first]
    return inverse.ravel().astype(np.int64), names


class SegmentScanner:
    """Walks one segment buffer; `batches()` yields RecordBatch objects, then one SegmentEnd."""

    def __init__(self, buf, base: int, file: str, *, verify_crc: bool = True, start: int = 0,
                 window: int = WINDOW_BYTES) -> None:
        self.buf = buf
        self.base = base
        self.file = file
        self.verify_crc = verify_crc
        self.start = start
        self.window = window
        self.arr = np.frombuffer(buf, dtype=np.uint8)
        self.i4 = _strided(self.arr, ">i4")
        self.i8 = _strided(self.arr, ">i8")
        self.findings: list[Finding] = []
        self.end: SegmentEnd | None = None

    # -- candidate discovery -------------------------------------------------------------
    def _candidates(self, lo: int, hi: int) -> np.ndarray:
        """Starts in [lo, hi) with a message magic, a plausible size and their own offset."""
        arr, size = self.arr, len(self.arr)
        found = []
        for c0 in range(lo + MAGIC_OFFSET, min(hi + MAGIC_OFFSET, size), _SEARCH_CHUNK):
            c1 = min(c0 + _SEARCH_CHUNK, hi + MAGIC_OFFSET, size)
            found.append(np.flatnonzero(arr[c0:c1] == _MAGIC_FIRST_BYTE) + (c0 - MAGIC_OFFSET))
        if not found:
            return np.zeros(0, dtype=np.int64)
        c = np.concatenate(found)
        c = c[c + MIN_RECORD_LEN <= size]
        magic = self.i4[c + MAGIC_OFFSET]
        c = c[(magic == MAGIC_V1) | (magic == MAGIC_V2)]
        c = c[self.i8[c + PHYSICAL_OFFSET_OFFSET] == c + self.base]
        total = self.i4[c]
        return c[(total >= MIN_RECORD_LEN) & (total <= size - c)]

    # -- the walk ------------------------------------------------------------------------------
    def batches(self) -> Iterator[RecordBatch | SegmentEnd]:
        size = len(self.arr)
        pos = self.start
        while self.end is None:
            if pos >= size:
                self.end = SegmentEnd(self.file, self.base, pos, END_FILE)
                break
            hi = min(pos + self.window, size)
            cand = self._candidates(pos, hi)
            nexts = cand + self.i4[cand]
            run_starts: list[np.ndarray] = []
            while pos < hi and self.end is None:
                j = int(np.searchsorted(cand, pos))
                if j < len(cand) and cand[j] == pos:
                    chain = np.flatnonzero(nexts[j:-1] != cand[j + 1 :])
                    k = j + (int(chain[0]) if chain.size else len(cand) - 1 - j)
                    run_starts.append(cand[j : k + 1])
                    pos = int(nexts[k])
                else:
                    here = pos
                    pos, keep = self._slow_step(pos, cand, j)
                    if keep:
                        run_starts.append(np.array([here], dtype=np.int64))
            if run_starts:
                yield from self._columns(np.concatenate(run_starts))
        yield self.end

    def _slow_step(self, pos: int, cand: np.ndarray, j: int) -> tuple[int, bool]:
        """Classify the bytes at `pos` with the per-record decoder.

        Returns where to go on and whether `pos` holds a good record to keep.
        """
        rec = message.decode(self.buf, pos, verify_crc=False, expected_offset=self.base + pos)
        if isinstance(rec, Blank):
            self.end = SegmentEnd(self.file, self.base, pos, END_BLANK)
            return pos, False
        if isinstance(rec, message.Message):
            return pos + rec.store_size, True
        size = len(self.arr)
        next_cand = self._next_candidate(pos + 1, cand, j)
        stop = next_cand if next_cand is not None else size
        if not self.arr[pos:stop].any():
            if next_cand is None:
                self.end = SegmentEnd(self.file, self.base, pos, END_ZEROS)
            else:
                self._report(pos, "zero-filled gap before the next record", stop - pos)
            return stop, False
        if rec.reason.startswith(_SIZED_REASONS) and (next_cand is None or pos + rec.length <= next_cand):
            self._report(pos, rec.reason, rec.length)
            return pos + rec.length, False
        if next_cand is None:
            garbage = int(np.flatnonzero(self.arr[pos:])[-1]) + 1
            self._report(pos, f"{rec.reason}; no record follows", garbage)
            self.end = SegmentEnd(self.file, self.base, pos, END_ZEROS)
            return size, False
        self._report(pos, f"{rec.reason}; skipped to the next record", stop - pos)
        return stop, False

    def _next_candidate(self, lo: int, cand: np.ndarray, j: int) -> int | None:
        later = cand[j:]
        later = later[later >= lo]
        if later.size:
            return int(later[0])
        found = self._candidates(lo, len(self.arr))
        return int(found[0]) if found.size else None

    def _report(self, pos: int, reason: str, nbytes: int, severity: str = ERROR) -> None:
        self.findings.append(Finding(self.file, self.base + pos, reason, int(nbytes), severity))

    # -- columns ---------------------------------------------------------------------------
    def _columns(self, starts: np.ndarray) -> Iterator[RecordBatch]:
        arr = self.arr
        v4_dtype = message.header_dtype(False, False)
        head = _strided(arr, f"V{v4_dtype.itemsize}")
        limit = len(head)
        inside = starts < limit
        raw = np.zeros(len(starts), dtype=v4_dtype)
        raw[inside] = head[starts[inside]].view(v4_dtype)
        cols = {name: raw[name].astype(raw.dtype[name].newbyteorder("=")) for name in _COLUMN_FIELDS}
        sys_flag = self.i4[starts + message.SYS_FLAG_OFFSET]
        cols["sysFlag"] = sys_flag.astype(np.int32)
        hdr_len = np.full(len(starts), v4_dtype.itemsize, dtype=np.int64)
        odd = np.flatnonzero(((sys_flag & _HOST_V6_BITS) != 0) | ~inside)
        for i in odd.tolist():  # IPv6 hosts, or a header at the very end: the struct codec
            self._fill_odd(int(starts[i]), i, cols, hdr_len)
        body_pos = starts + hdr_len
        body_len = cols["bodyLength"].astype(np.int64)
        tl_pos = body_pos + body_len
        v2 = cols["magicCode"] == MAGIC_V2
        topic_len = arr[np.clip(tl_pos, 0, len(arr) - 1)].astype(np.int64)
        if v2.any():
            topic_len[v2] = self.i4[tl_pos[v2] - 2] & 0xFFFF
        topic_pos = tl_pos + np.where(v2, 2, 1)
        props_len_pos = topic_pos + topic_len
        props_len = np.zeros(len(starts), dtype=np.int64)
        ok_pos = props_len_pos + 2 <= len(arr)
        props_len[ok_pos] = (arr[props_len_pos[ok_pos]].astype(np.int64) << 8) | arr[props_len_pos[ok_pos] + 1]
        props_pos = props_len_pos + 2
        consistent = (body_len >= 0) & ok_pos & (props_len < 0x8000) & (props_pos + props_len - starts == cols["totalSize"])
        batch = RecordBatch(self.file, self.base, self.buf, starts, cols, body_pos, topic_pos, topic_len,
                            props_pos, props_len)
        good = consistent
        for i in np.flatnonzero(~consistent).tolist():
            rec = message.decode(self.buf, int(starts[i]), verify_crc=False)
            reason = rec.reason if isinstance(rec, Corrupt) else "record length mismatch"
            self._report(int(starts[i]), reason, int(cols["totalSize"][i]))
        if self.verify_crc:
            crc = np.zeros(len(starts), dtype=np.int64)
            crc[good] = batch.select(good).body_crcs()
            bad_crc = good & (crc != cols["bodyCRC"])
            for i in np.flatnonzero(bad_crc).tolist():
                self._report(int(starts[i]), f"body CRC mismatch: stored {int(cols['bodyCRC'][i])}, "
                             f"computed {int(crc[i])}", int(cols["totalSize"][i]))
            good = good & ~bad_crc
        yield batch if good.all() else batch.select(good)

    def _fill_odd(self, start: int, i: int, cols: dict[str, np.ndarray], hdr_len: np.ndarray) -> None:
        flags = int(cols["sysFlag"][i])
        st = message.HEADER_STRUCTS[(sysflag.born_host_v6(flags), sysflag.store_host_v6(flags))]
        hdr_len[i] = st.size
        if start + st.size > len(self.arr):
            cols["bodyLength"][i] = -1
            return
        values = dict(zip(_ALL_FIELDS, st.unpack_from(self.buf, start), strict=True))
        for name in _COLUMN_FIELDS:
            cols[name][i] = values[name]


_ALL_FIELDS = [name for name, _ in message.header_fields(False, False)]
_COLUMN_FIELDS = [n for n in _ALL_FIELDS if not n.endswith("Address") and n != "sysFlag"]


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

