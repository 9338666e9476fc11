"""Scanning a DLedger data segment: the entry walk (compiled) hands each entry's body to the one
record walker, so the records come out as the same `RecordBatch` columns a plain segment gives.

Stops and resynchronization mirror the plain scanner: a blank closes the segment, zeros end
the log, anything else is a Finding and the scan goes on at the next position that holds the
entry magic and its own offset in the `pos` field.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rmqtool.structures.commitlog.kernels import (
    POLICY_SCAN,
    STOP_BLANK,
    STOP_END,
    STOP_FULL,
    STOP_LENGTH,
    STOP_MAGIC,
    STOP_WINDOW,
    walk,
)
from rmqtool.structures.commitlog.scan import (
    CORRUPT_REGION,
    END_BLANK,
    END_ZEROS,
    GARBAGE_TAIL,
    ZERO_GAP,
    SegmentEnd,
    SegmentScanner,
)
from rmqtool.structures.dledger import (
    BLANK_LEN,
    BLANK_MAGIC,
    BODY_LENGTH_OFFSET,
    BODY_OFFSET,
    ENTRY_MAGIC,
    POS_OFFSET,
    SIZE_OFFSET,
)
from rmqtool.structures.nbutil import get_i32, get_i64

STOP_ENTRY = 8  # an entry whose body is not exactly one good record


@njit(cache=True, nogil=True)
def walk_entries(buf, pos, end, base, out):
    """Accept entries from `pos` while they start before `end`: a geometry row per record.
    Returns (rows, stop position, why: kernels.STOP_* or STOP_ENTRY)."""
    size = buf.shape[0]
    n = 0
    while True:
        if pos >= end:
            return n, pos, STOP_WINDOW
        if n >= out.shape[0]:
            return n, pos, STOP_FULL
        if pos + BLANK_LEN > size:
            return n, pos, STOP_END
        magic = get_i32(buf, pos)
        if magic == BLANK_MAGIC:
            return n, pos, STOP_BLANK
        if magic != ENTRY_MAGIC:
            return n, pos, STOP_MAGIC
        total = get_i32(buf, pos + SIZE_OFFSET)
        if total < BODY_OFFSET or total > size - pos or get_i64(buf, pos + POS_OFFSET) != base + pos:
            return n, pos, STOP_LENGTH
        body_len = get_i32(buf, pos + BODY_LENGTH_OFFSET)
        if body_len != total - BODY_OFFSET:
            return n, pos, STOP_LENGTH
        body = pos + BODY_OFFSET
        k, stop, _, _ = walk(buf, body, body + 1, base, out[n:], POLICY_SCAN, False)
        if k != 1 or stop != body + body_len:
            return n, pos, STOP_ENTRY
        n += 1
        pos += total


class DLedgerScanner(SegmentScanner):
    """`SegmentScanner` for a DLedger data segment: same batches, same findings, entry-wrapped records."""

    def _walk(self, pos: int, hi: int, out: np.ndarray) -> tuple[int, int, int]:
        return walk_entries(self.arr, pos, hi, self.base, out)

    def _resume(self, pos: int, why: int, runs: list[np.ndarray]) -> int:
        return pos if why == STOP_FULL else self._stopped(pos, why)

    def _stopped(self, pos: int, why: int) -> int:
        """Classify a stop at `pos`; returns where to go on (or ends the segment)."""
        if why == STOP_BLANK:
            self.end = SegmentEnd(self.file, self.base, pos, END_BLANK)
            return pos
        nxt = self.next_record_start(pos + 1)
        stop = nxt if nxt is not None else len(self.arr)
        if not self.arr[pos : max(min(stop, self.data_end), pos)].any():
            if nxt is None:
                self.end = SegmentEnd(self.file, self.base, pos, END_ZEROS)
            else:
                self._report(pos, "zero-filled gap before the next entry", stop - pos, ZERO_GAP)
            return stop
        reason = "entry body is not one well-formed record" if why == STOP_ENTRY else \
            "not a DLedger entry (magic, size or pos field)"
        self._report(pos, reason + ("; skipped to the next entry" if nxt is not None else "; no entry follows"),
                     stop - pos, CORRUPT_REGION if nxt is not None else GARBAGE_TAIL)
        if nxt is None:
            self.end = SegmentEnd(self.file, self.base, pos, END_ZEROS)
        return stop

    def _candidates(self, lo: int, hi: int) -> np.ndarray:
        """Positions in [lo, hi) holding the entry magic and, in the pos field, their own offset."""
        if hi <= lo:
            return np.zeros(0, dtype=np.int64)
        top = min(hi, len(self.arr) - BODY_OFFSET)
        if top <= lo:
            return np.zeros(0, dtype=np.int64)
        last_byte = ENTRY_MAGIC.to_bytes(4, "big")[-1]  # the magic's low byte, then the whole int checked
        c = np.flatnonzero(self.arr[lo + 3 : top + 3] == last_byte).astype(np.int64) + lo
        c = c[self.i4[c] == ENTRY_MAGIC]
        return c[self.i8[c + POS_OFFSET] == c + self.base]
