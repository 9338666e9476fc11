"""An index file's slot and entry counts. Files do not record them: they follow from the file's
size when the broker's own 1:4 slot-to-entry ratio holds, else only a broker.conf says. A store's are
resolved once, when it is opened (`store_geometry`); a file whose size differs is read by its own
(`files.IndexFiles.index_geometry`)."""

from __future__ import annotations

from collections import Counter

from rmqtool.errors import RmqError
from rmqtool.structures.index import DEFAULT_HASH_SLOTS, DEFAULT_INDEX_NUM, ENTRY_LEN, HEADER_LEN, SLOT_LEN, file_len

ENTRIES_PER_SLOT = 4  # maxIndexNum = 4 x maxHashSlotNum in every broker default
MIN_INDEX_NUM = 2  # entry 0 is never used: a file needs one more to hold a key


def geometry_of_size(size: int) -> tuple[int, int] | None:
    """(slots, entries) of a `size`-byte file: the defaults, or the 1:4 ratio; None when neither fits."""
    if size == file_len(DEFAULT_HASH_SLOTS, DEFAULT_INDEX_NUM):
        return DEFAULT_HASH_SLOTS, DEFAULT_INDEX_NUM
    body = size - HEADER_LEN
    per_slot = SLOT_LEN + ENTRIES_PER_SLOT * ENTRY_LEN
    if body > 0 and body % per_slot == 0:
        return body // per_slot, ENTRIES_PER_SLOT * (body // per_slot)
    return None


def geometry_refusal(slots: int, entries: int) -> str | None:
    """Why the broker could not index with this geometry (None when it could)."""
    if slots <= 0:
        return f"maxHashSlotNum={slots} leaves no hash slot"
    if entries < MIN_INDEX_NUM:
        return f"maxIndexNum={entries} leaves no room for an entry (entry 0 is never used)"
    return None


def store_geometry(sizes: list[int], slots: int, entries: int, configured: bool) -> tuple[int, int] | None:
    """(slots, entries) of a store whose index files (a sample) are `sizes` bytes, against the config's
    `slots` and `entries` (`configured`: a broker.conf set them); None: the config's stand. Refused when
    files that agree with each other contradict a configured geometry (a lone odd file is damage, which
    verify reports), or no ratio gives their size."""
    if not sizes:
        return None
    said = file_len(slots, entries)
    common, times = Counter(sizes).most_common(1)[0]
    if said in sizes:
        return None
    if configured:
        if times > 1:
            shown = ", ".join(str(s) for s in sorted(set(sizes))[:3])
            raise RmqError(f"the config says maxHashSlotNum={slots}, maxIndexNum={entries} ({said}-byte files), but "
                           f"the index files are {shown} bytes: pass the broker.conf the store was written with")
        return None
    geometry = geometry_of_size(common)
    if geometry is None and times > 1:
        raise RmqError(f"the index files are {common} bytes, which no default slot/entry ratio gives: "
                       "pass the store's broker.conf with --config (maxHashSlotNum, maxIndexNum)")
    return geometry
