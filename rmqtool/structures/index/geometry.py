"""An index file's slot and entry counts. Files do not record them: they follow from the file's
size when the broker's own 1:4 slot-to-entry ratio holds, else only a broker.conf says, and what a
broker.conf says overrides a file's own (`file_geometry`, the one rule). A store's are resolved once,
when it is opened (`store_geometry`); a file whose size differs is read by its own
(`files.IndexFiles.index_geometry`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.structures.index import (
    DEFAULT_HASH_SLOTS,
    DEFAULT_INDEX_NUM,
    ENTRY_LEN,
    HEADER_LEN,
    SLOT_LEN,
    file_len,
    file_names,
)

ENTRIES_PER_SLOT = 4  # maxIndexNum = 4 x maxHashSlotNum in every broker default
MIN_INDEX_NUM = 2  # entry 0 is never used: a file needs one more to hold a key
SETTINGS = ("maxHashSlotNum", "maxIndexNum")  # a broker.conf that sets either fixes the geometry
SAMPLED_FILES = 8  # of tens of thousands, maybe: a store's geometry is read from a few


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


def file_geometry(size: int, slots: int, entries: int, given: Collection[str]) -> tuple[int, int] | None:
    """(slots, entries) a `size`-byte file is read with, against the settings' `slots` and `entries` (`given`:
    the settings a broker.conf set): the settings' when they make its size or a broker.conf set them (they
    override a file's own), else its size's own (`geometry_of_size`); None when its size gives none."""
    if file_len(slots, entries) == size or set(SETTINGS) & set(given):
        return slots, entries
    return geometry_of_size(size)


def store_geometry(directory: Path, slots: int, entries: int, given: Collection[str]) -> tuple[int, int] | None:
    """(slots, entries) of a store whose index files are in `directory` (a few sampled), against the settings'
    `slots` and `entries` (`given`: the settings a broker.conf set); None: the settings stand. Refused when
    files that agree with each other contradict a configured geometry (a lone odd file is damage, which
    verify reports), or no ratio gives their size."""
    sizes = [(directory / n).stat().st_size for n in file_names(directory)[:SAMPLED_FILES]]
    if not sizes or file_len(slots, entries) in sizes:
        return None
    common, times = Counter(sizes).most_common(1)[0]
    geometry = file_geometry(common, slots, entries, given)
    if geometry == (slots, entries):  # a broker.conf set them, and they do not make the files' size
        if times > 1:
            shown = ", ".join(str(s) for s in sorted(set(sizes))[:3])
            raise RmqError(f"the config says maxHashSlotNum={slots}, maxIndexNum={entries} "
                           f"({file_len(slots, entries)}-byte files), but the index files are {shown} bytes: "
                           "pass the broker.conf the store was written with")
        return None
    if geometry is None and times > 1:
        raise RmqError(f"the index files are {common} bytes, which no default slot/entry ratio gives: "
                       "pass the store's broker.conf with --config (maxHashSlotNum, maxIndexNum)")
    return geometry
