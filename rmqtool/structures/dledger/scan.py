"""Scanning a DLedger data segment: the entry walk (compiled) hands each entry's body to the one
record walker, so the records come out as the same `RecordBatch` columns a plain segment gives.

Stops and resynchronization mirror the plain scanner: a blank closes the segment, zeros end
the log, anything else is a Finding and the scan goes on at the next position that holds the
entry magic and its own offset in the `pos` field.
"""

from __future__ import annotations

import numpy as np

from rmqtool.structures.commitlog.kernels import record_at
from rmqtool.structures.commitlog.scan import CORRUPT_REGION, GARBAGE_TAIL, ZERO_GAP, SegmentScanner
from rmqtool.structures.dledger import (
    BLANK_LEN,
    BLANK_MAGIC,
    BODY_LENGTH_OFFSET,
    BODY_OFFSET,
    ENTRY_MAGIC,
    POS_OFFSET,
    SIZE_OFFSET,
)
from rmqtool.structures.jit import kernel
from rmqtool.structures.nbutil import get_i32, get_i64

# why the entry walk stopped
_ROOM, _FULL, _END, _BLANK, _BAD, _BAD_BODY = range(6)  # window end, rows full, file end, blank, bad entry, bad body


@kernel(nogil=True)
def walk_entries(buf, pos, end, base, out):
    """Accept entries from `pos` while they start before `end`: a geometry row per record.
    Returns (rows, stop position, why: one of the stops above)."""
    size = buf.shape[0]
    n = 0
    while True:
        if pos >= end:
            return n, pos, _ROOM
        if n >= out.shape[0]:
            return n, pos, _FULL
        if pos + BLANK_LEN > size:
            return n, pos, _END
        magic = get_i32(buf, pos)
        if magic == BLANK_MAGIC:
            return n, pos, _BLANK
        if magic != ENTRY_MAGIC:
            return n, pos, _BAD
        total = get_i32(buf, pos + SIZE_OFFSET)
        if total < BODY_OFFSET or total > size - pos or get_i64(buf, pos + POS_OFFSET) != base + pos:
            return n, pos, _BAD
        body_len = get_i32(buf, pos + BODY_LENGTH_OFFSET)
        if body_len != total - BODY_OFFSET:
            return n, pos, _BAD
        body = pos + BODY_OFFSET
        if record_at(buf, body, base, out[n:]) != body + body_len:
            return n, pos, _BAD_BODY
        n += 1
        pos += total


class DLedgerScanner(SegmentScanner):
    """`SegmentScanner` for a DLedger data segment: same batches, same findings, entry-wrapped records."""

    def _walk(self, pos: int, hi: int, out: np.ndarray) -> tuple[int, int, int]:
        return walk_entries(self.arr, pos, hi, self.base, out)

    def _resume(self, pos: int, why: int, runs: list[np.ndarray]) -> int:
        return pos if why == _FULL else self._stopped(pos, why)

    def _stopped(self, pos: int, why: int) -> int:
        """Classify a stop at `pos`; returns where to go on (or ends the segment)."""
        if why == _BLANK:
            self.close_at_blank(pos)
            return pos
        nxt = self.next_record_start(pos + 1)
        stop = nxt if nxt is not None else len(self.arr)
        if not self.arr[pos : max(min(stop, self.data_end), pos)].any():
            if nxt is None:
                self.close_in_zeros(pos)
            else:
                self._report(pos, "zero-filled gap before the next entry", stop - pos, ZERO_GAP)
            return stop
        reason = "entry body is not one well-formed record" if why == _BAD_BODY else \
            "not a DLedger entry (magic, size or pos field)"
        self._report(pos, reason + ("; skipped to the next entry" if nxt is not None else "; no entry follows"),
                     stop - pos, CORRUPT_REGION if nxt is not None else GARBAGE_TAIL)
        if nxt is None:
            self.close_in_zeros(pos)
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
