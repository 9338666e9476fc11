"""Putting keys into one hash index file, as the broker's IndexFile.putKey does, compiled.

The file is a flat uint8 array: header, slot table, entries (layout in `structures.index`).
A new entry links to the slot's previous entry (a slot value outside 1..indexCount counts
as empty), the slot then points at the new entry; the header's begin fields are set by
the first entry, its end fields by every entry.
"""

from __future__ import annotations

import numpy as np

from rmqtool.structures.index import (
    BEGIN_PHY_AT,
    BEGIN_TIMESTAMP_AT,
    END_PHY_AT,
    END_TIMESTAMP_AT,
    ENTRY_LEN,
    FIRST_INDEX,
    HEADER_DTYPE,
    INDEX_COUNT_AT,
    INVALID_INDEX,
    KEY_HASH_AT,
    PHY_OFFSET_AT,
    PREV_INDEX_AT,
    SLOT_COUNT_AT,
    TIME_DIFF_AT,
    entries_offset,
    slot_position,
)
from rmqtool.structures.jit import kernel
from rmqtool.structures.nbutil import get_i32, get_i64, put_i32, put_i64

_MS_PER_S = 1000
_INT_MAX = 2**31 - 1
_entries_offset = kernel(nogil=True)(entries_offset)  # the layout's own rules, compiled
_slot_position = kernel(nogil=True)(slot_position)


@kernel(nogil=True)
def put_keys(buf, hash_slots, index_num, hashes, phys, times, i, n):
    """Put keys i..n-1 (hash, phyOffset, storeTimestamp) until the file is full; returns the next i."""
    entries_at = _entries_offset(hash_slots)
    count = get_i32(buf, INDEX_COUNT_AT)
    used = get_i32(buf, SLOT_COUNT_AT)
    begin_ts = get_i64(buf, BEGIN_TIMESTAMP_AT)
    while i < n and count < index_num:
        h = hashes[i]
        slot_at = _slot_position(h % hash_slots)
        prev = get_i32(buf, slot_at)
        if prev <= INVALID_INDEX or prev > count:
            prev = INVALID_INDEX
        diff = (times[i] - begin_ts) // _MS_PER_S if times[i] >= begin_ts else -((begin_ts - times[i]) // _MS_PER_S)
        if begin_ts <= 0 or diff < 0:
            diff = 0
        elif diff > _INT_MAX:
            diff = _INT_MAX
        e = entries_at + count * ENTRY_LEN
        put_i32(buf, e + KEY_HASH_AT, h)
        put_i64(buf, e + PHY_OFFSET_AT, phys[i])
        put_i32(buf, e + TIME_DIFF_AT, diff)
        put_i32(buf, e + PREV_INDEX_AT, prev)
        put_i32(buf, slot_at, count)
        if count <= FIRST_INDEX:
            put_i64(buf, BEGIN_PHY_AT, phys[i])
            put_i64(buf, BEGIN_TIMESTAMP_AT, times[i])
            begin_ts = times[i]
        if prev == INVALID_INDEX:
            used += 1
        count += 1
        put_i64(buf, END_PHY_AT, phys[i])
        put_i64(buf, END_TIMESTAMP_AT, times[i])
        i += 1
    put_i32(buf, INDEX_COUNT_AT, count)
    put_i32(buf, SLOT_COUNT_AT, used)
    return i


def new_header(end_phy_offset: int, end_timestamp: int) -> bytes:
    """A fresh file's header: it starts where the previous file ended (0 for the first file)."""
    hdr = np.zeros(1, dtype=HEADER_DTYPE)
    if end_phy_offset > 0:
        hdr["beginPhyOffset"] = hdr["endPhyOffset"] = end_phy_offset
    if end_timestamp > 0:
        hdr["beginTimestamp"] = hdr["endTimestamp"] = end_timestamp
    hdr["indexCount"] = FIRST_INDEX
    return hdr.tobytes()

