"""Hash index files built in bulk from (key hash, phyOffset, storeTimestamp) columns, vectorized.

The result equals what putting the keys one by one (`indexkernel.put_keys`, the broker's
IndexFile.putKey) makes of them in a fresh index: files of maxIndexNum - 1 entries each; in a
file, entry k (numbered from 1) links to the previous entry of its slot, each slot holds its
newest entry, hashSlotCount counts the slots in use; begin fields come from the first entry and
end fields from the last; timeDiff is seconds since the file's beginTimestamp, except that the
first entry of a file is timed against the previous file's end, as the broker's new file
starts from it.
"""

from __future__ import annotations

import numpy as np

from rmqtool.structures.index import (
    ENTRY_DTYPE,
    FIRST_INDEX,
    HEADER_DTYPE,
    HEADER_LEN,
    SLOT_DTYPE,
    entry_position,
    file_len,
    slot_position,
)
from rmqtool.structures.index.kernel import new_header

_MS_PER_S = 1000
_INT_MAX = 2**31 - 1


def split_files(n_keys: int, index_num: int) -> list[tuple[int, int]]:
    """[start, end) key ranges of each file: maxIndexNum - 1 entries fill one."""
    per_file = index_num - FIRST_INDEX
    return [(a, min(a + per_file, n_keys)) for a in range(0, n_keys, per_file)]


def fill_file(buf, hashes: np.ndarray, phys: np.ndarray, times: np.ndarray, hash_slots: int,
              prev_end: tuple[int, int] = (0, 0), part: tuple[int, int] = (0, 1)) -> tuple[int, int]:
    """Write one index file (zeroed `buf` of the file's length) holding these keys in order.

    `prev_end` is the previous file's (endPhyOffset, endTimestamp). Returns this file's.
    `part` (k, parts) writes only the k-th share of the entries and of the slot table, and the
    header when k is 0: the parts of one file can be written by separate processes.
    """
    n = len(hashes)
    k, parts = part
    # Entries grouped by slot, in entry order within a slot: one sort of (slot, position) packed
    # in an int64 (slot above the position's bits).
    shift = max(n - 1, 1).bit_length()
    ranked = np.sort(((hashes % hash_slots) << shift) | np.arange(n, dtype=np.int64))
    order, s_sorted = ranked & ((1 << shift) - 1), ranked >> shift
    del ranked
    number = order + FIRST_INDEX
    first_of_slot = np.r_[True, s_sorted[1:] != s_sorted[:-1]]
    prev = np.empty(n, dtype=np.int64)
    prev[order] = np.where(first_of_slot, 0, np.r_[0, number[:-1]])
    last_of_slot = np.r_[first_of_slot[1:], True]

    lo, hi = n * k // parts, n * (k + 1) // parts
    begin_ts = int(times[0])
    base = np.full(hi - lo, begin_ts, dtype=np.int64)
    if lo == 0 and hi > 0:
        base[0] = prev_end[1]  # the first entry is timed before its file's begin is set
    diff = (times[lo:hi] - base) // _MS_PER_S
    diff = np.where(base <= 0, 0, np.clip(diff, 0, _INT_MAX))
    rows = np.zeros(hi - lo, dtype=ENTRY_DTYPE)
    mine = slice(lo, hi)
    rows["keyHash"], rows["phyOffset"], rows["timeDiff"], rows["prevIndex"] = hashes[mine], phys[mine], diff, prev[mine]
    view = np.frombuffer(buf, dtype=np.uint8)
    start = entry_position(hash_slots, FIRST_INDEX + lo)
    view[start : start + rows.nbytes] = rows.view(np.uint8)

    slot_lo, slot_hi = hash_slots * k // parts, hash_slots * (k + 1) // parts
    newest = np.flatnonzero(last_of_slot)
    owned = newest[(s_sorted[newest] >= slot_lo) & (s_sorted[newest] < slot_hi)]
    slots = np.frombuffer(buf, dtype=SLOT_DTYPE, count=hash_slots, offset=slot_position(0))
    slots[s_sorted[owned]] = number[owned]
    if k == 0:
        header = np.frombuffer(new_header(0, 0), dtype=HEADER_DTYPE).copy()
        header["beginTimestamp"], header["endTimestamp"] = begin_ts, int(times[-1])
        header["beginPhyOffset"], header["endPhyOffset"] = int(phys[0]), int(phys[-1])
        header["hashSlotCount"] = len(newest)
        header["indexCount"] = FIRST_INDEX + n
        view[:HEADER_LEN] = header.view(np.uint8)
    del view, slots
    return int(phys[-1]), int(times[-1])


def build_files(hashes: np.ndarray, phys: np.ndarray, times: np.ndarray, hash_slots: int,
                index_num: int, parts: int = 1) -> list[bytes]:
    """Every index file a fresh index holds after these keys (for tests and small loads),
    each written in `parts` parts."""
    out = []
    prev_end = (0, 0)
    for a, b in split_files(len(hashes), index_num):
        buf = bytearray(file_len(hash_slots, index_num))
        for k in range(parts):
            end = fill_file(buf, hashes[a:b], phys[a:b], times[a:b], hash_slots, prev_end, (k, parts))
        prev_end = end
        out.append(bytes(buf))
    return out
