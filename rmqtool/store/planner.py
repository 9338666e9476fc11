"""Where many records go, decided before a byte is written (plain numpy and one compiled loop).

Given the records' lengths, the commitlog's write position and the segment size, the
layout puts each record where the broker's append would: behind the previous one while it
leaves 8 bytes in its segment, else at the start of the next segment behind a blank marker.
Queue offsets continue each topic-queue's counter; prepared and rolled-back records get 0
and do not count. Bulk import and the Spark load plan through here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from rmqtool.format import sysflag
from rmqtool.format.message import BLANK_MARKER_LEN


@dataclass
class Layout:
    physical_offset: np.ndarray  # where each record starts
    blanks: np.ndarray  # physical offsets of blank markers (each closes its segment)
    end: int  # the commitlog's write position after the last record


@njit(cache=True)
def _place(lengths, start, segment, out, blanks):
    pos = start
    nb = 0
    for i in range(lengths.shape[0]):
        left = segment - pos % segment
        if lengths[i] + BLANK_MARKER_LEN > left:
            blanks[nb] = pos
            nb += 1
            pos += left
        out[i] = pos
        pos += lengths[i]
    return nb, pos


def plan_layout(lengths: np.ndarray, start: int, segment_size: int) -> Layout:
    out = np.empty(len(lengths), dtype=np.int64)
    blanks = np.empty(len(lengths), dtype=np.int64)
    nb, end = _place(lengths.astype(np.int64), start, segment_size, out, blanks)
    return Layout(out, blanks[:nb].copy(), int(end))


def plan_queue_offsets(keys: list[tuple[str, int]], key_ids: np.ndarray, sys_flag: np.ndarray,
                       table: dict[tuple[str, int], int]) -> np.ndarray:
    """Each record's queue offset (key_ids index `keys`); advances `table` as the broker's would."""
    tx = sys_flag & sysflag.TRANSACTION_MASK
    counted = (tx == sysflag.TRANSACTION_NOT) | (tx == sysflag.TRANSACTION_COMMIT)
    out = np.zeros(len(key_ids), dtype=np.int64)
    ids = key_ids[counted]
    if len(ids):
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
        rank = np.arange(len(ids)) - np.repeat(starts, np.diff(np.r_[starts, len(ids)]))
        base = np.array([table.get(keys[k], 0) for k in sorted_ids[starts].tolist()], dtype=np.int64)
        within = np.empty(len(ids), dtype=np.int64)
        within[order] = rank + np.repeat(base, np.diff(np.r_[starts, len(ids)]))
        out[counted] = within
        for k, b, n in zip(sorted_ids[starts].tolist(), base.tolist(), np.diff(np.r_[starts, len(ids)]).tolist(),
                           strict=True):
            table[keys[k]] = b + n
    return out
