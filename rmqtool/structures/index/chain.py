"""One bucket's chain in an index file, followed as the broker's IndexFile.selectPhyOffset follows it.

The rule, written once: query walks one chain with `walk`; verify marks every entry a lookup can
reach with `reachable`, and decode measures every bucket's chain with `lengths` (compiled passes over
the whole file, tested equal to `walk`).
- Entries 1 .. bound-1 are written, bound = indexCount (at most the file's maxIndexNum): a slot
  naming anything else is an empty bucket.
- From the slot's entry, prevIndex leads to the next older entry of the bucket.
- An entry whose timeDiff is negative ends the chain before it (the broker's `timeDiff < 0` break);
  one timed (beginTimestamp + timeDiff s) before the lookup's begin ends it after it.
- A prevIndex that does not point back, to a lower written entry, ends the chain: a damaged file's
  loop or jump forward leads nowhere, so a walk meets each entry at most once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from rmqtool.structures.index import (
    ENTRY,
    ENTRY_LEN,
    FIRST_INDEX,
    HEADER,
    HEADER_LEN,
    SLOT,
    SLOT_LEN,
    decode_entries,
    decode_slots,
    entries_offset,
    entry_position,
    slot_position,
)
from rmqtool.structures.jit import kernel

if TYPE_CHECKING:  # numpy loads on the first `reachable` (numba when it compiles): a lookup starts faster
    import numpy as np

Reader = Callable[[int, int], bytes]  # (file offset, length) -> bytes, fewer at the end of the file
_MS_PER_S = 1000
_ENTRY = ENTRY.codec
_SLOT = SLOT.codec
_HEADER = HEADER.codec


class Link(NamedTuple):
    """One entry met on a chain."""

    number: int
    key_hash: int
    phy_offset: int
    timestamp: int  # beginTimestamp + timeDiff seconds


def entry_bound(index_count: int, index_num: int) -> int:
    """One past the last written entry number: indexCount, at most the file's maxIndexNum."""
    return max(min(int(index_count), int(index_num)), FIRST_INDEX)


def entries_held(index_count: int, index_num: int) -> int:
    """How many entries a header of `index_count` says its file holds (entry 0 is never one): the one rule
    every count of a store's index entries takes."""
    return entry_bound(index_count, index_num) - FIRST_INDEX


def pread_reader(fd: int) -> Reader:
    return lambda at, n: os.pread(fd, n, at)


def buffer_reader(buf) -> Reader:
    return lambda at, n: bytes(buf[at : at + n])


def header_fields(read: Reader) -> tuple[int, int, int, int, int, int]:
    """(beginTimestamp, endTimestamp, beginPhyOffset, endPhyOffset, hashSlotCount, indexCount), in one
    read; a file cut inside its header reads as zeros past its end."""
    return _HEADER.unpack(read(0, HEADER_LEN).ljust(HEADER_LEN, b"\0"))


def walk(read: Reader, hash_slots: int, bound: int, begin_ts: int, slot: int, begin: int = 0) -> Iterator[Link]:
    """The entries of bucket `slot`, newest first, as far as a lookup from `begin` (ms) follows them."""
    raw = read(slot_position(slot), SLOT_LEN)
    if len(raw) < SLOT_LEN:
        return
    number = _SLOT.unpack(raw)[0]
    while FIRST_INDEX <= number < bound:  # numbers only go down: at most bound - 1 steps
        raw = read(entry_position(hash_slots, number), ENTRY_LEN)
        if len(raw) < ENTRY_LEN:
            return
        key_hash, phy, diff, prev = _ENTRY.unpack(raw)
        if diff < 0:
            return
        when = begin_ts + diff * _MS_PER_S
        yield Link(number, key_hash, phy, when)
        if when < begin or prev >= number:
            return
        number = prev


def reachable(buf: np.ndarray, hash_slots: int, bound: int, begin_ts: int, begin: int = 0, *, chunk: int = 1 << 20,
              passed: Callable[[int, int], None] | None = None) -> np.ndarray:
    """reach[n] for entry numbers 0 .. bound-1: whether some bucket's `walk` meets entry n.

    `buf` is the file as uint8. Entries are marked newest first, `chunk` at a time; `passed(lo, hi)`
    is told each byte range done with (the slot table, then each chunk), so a caller can give its
    pages back."""
    import numpy as np

    reach = np.zeros(max(bound, FIRST_INDEX), dtype=np.bool_)
    heads = decode_slots(buf, hash_slots).astype(np.int64)
    reach[heads[(heads >= FIRST_INDEX) & (heads < bound)]] = True
    if passed is not None:
        passed(slot_position(0), entries_offset(hash_slots))
    entries = decode_entries(buf, hash_slots, len(reach))
    for hi in range(bound, FIRST_INDEX, -chunk):
        lo = max(hi - chunk, FIRST_INDEX)
        part = entries[lo:hi]
        _follow(part["prevIndex"].astype(np.int64), part["timeDiff"].astype(np.int64), begin_ts, begin, lo, reach)
        if passed is not None:
            passed(entry_position(hash_slots, lo), entry_position(hash_slots, hi))
    return reach


@kernel(nogil=True, work=lambda prev, *_: len(prev))
def _follow(prev, diff, begin_ts, begin, lo, reach):
    """Entries lo+len-1 down to lo (their prevIndex and timeDiff): a marked entry passes the mark on
    by `walk`'s rule. Links point back, so every entry is marked before it is passed (run the newest
    range first)."""
    for i in range(len(prev) - 1, -1, -1):
        e = lo + i
        if not reach[e]:
            continue
        if diff[i] < 0:
            reach[e] = False
        elif begin_ts + diff[i] * _MS_PER_S >= begin and FIRST_INDEX <= prev[i] < e:
            reach[prev[i]] = True


def lengths(buf, hash_slots: int, bound: int, begin_ts: int, begin: int = 0, *, chunk: int = 1 << 20) -> np.ndarray:
    """For each slot naming a written entry (1 .. bound-1), in slot order: how many entries its `walk`
    from `begin` meets. Links point back, so one pass from the oldest entry up, `chunk` at a time, finds
    every entry's chain length from those of older entries."""
    import numpy as np

    heads = decode_slots(buf, hash_slots).astype(np.int64)
    heads = heads[(heads >= FIRST_INDEX) & (heads < bound)]
    entries = decode_entries(buf, hash_slots, max(bound, FIRST_INDEX))
    depth = np.zeros(len(entries), dtype=np.int64)
    for lo in range(FIRST_INDEX, len(entries), chunk):
        part = entries[lo : lo + chunk]
        _depths(part["prevIndex"].astype(np.int64), part["timeDiff"].astype(np.int64), begin_ts, begin, lo, depth)
    return depth[heads]


@kernel(nogil=True, work=lambda prev, *_: len(prev))
def _depths(prev, diff, begin_ts, begin, lo, depth):
    """Entries lo .. lo+len-1 (their prevIndex and timeDiff), oldest first: depth[e] is how many entries
    `walk` meets from entry e, by its rule, from the depths of the older entries it links to."""
    for i in range(len(prev)):
        e = lo + i
        if diff[i] < 0:
            depth[e] = 0
        elif begin_ts + diff[i] * _MS_PER_S >= begin and FIRST_INDEX <= prev[i] < e:
            depth[e] = 1 + depth[prev[i]]
        else:
            depth[e] = 1

