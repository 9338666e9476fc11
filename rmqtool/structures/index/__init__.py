"""Hash index files: a 40-byte header, a slot table, then 20-byte entries.

Header: beginTimestamp, endTimestamp, beginPhyOffset, endPhyOffset, hashSlotCount (slots in
use), indexCount (next entry number; starts at 1, entry 0 is never used). Slot: the newest
entry number of its bucket. Entry: keyHash, phyOffset, timeDiff (seconds since
beginTimestamp), prevIndex (0 ends the chain).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rmqtool.files.segments import read_head
from rmqtool.structures.javahash import java_string_hash
from rmqtool.structures.layout import Layout

if TYPE_CHECKING:
    import numpy as np

HEADER = Layout.of(
    ("beginTimestamp", ">i8"),
    ("endTimestamp", ">i8"),
    ("beginPhyOffset", ">i8"),
    ("endPhyOffset", ">i8"),
    ("hashSlotCount", ">i4"),
    ("indexCount", ">i4"),
)
SLOT = Layout.of(("entry", ">i4"))
ENTRY = Layout.of(("keyHash", ">i4"), ("phyOffset", ">i8"), ("timeDiff", ">i4"), ("prevIndex", ">i4"))
HEADER_LEN = HEADER.size  # 40
SLOT_LEN = SLOT.size  # 4
ENTRY_LEN = ENTRY.size  # 20
BEGIN_TIMESTAMP_AT, END_TIMESTAMP_AT = HEADER.offset("beginTimestamp"), HEADER.offset("endTimestamp")
BEGIN_PHY_AT, END_PHY_AT = HEADER.offset("beginPhyOffset"), HEADER.offset("endPhyOffset")
SLOT_COUNT_AT, INDEX_COUNT_AT = HEADER.offset("hashSlotCount"), HEADER.offset("indexCount")
KEY_HASH_AT, PHY_OFFSET_AT = ENTRY.offset("keyHash"), ENTRY.offset("phyOffset")
TIME_DIFF_AT, PREV_INDEX_AT = ENTRY.offset("timeDiff"), ENTRY.offset("prevIndex")


@functools.cache
def _dtypes() -> dict[str, np.dtype]:
    import numpy as np

    return {"HEADER_DTYPE": HEADER.dtype(), "SLOT_DTYPE": np.dtype(SLOT.fields[0][1]), "ENTRY_DTYPE": ENTRY.dtype()}


def entry_dtype() -> np.dtype:
    """The numpy dtype of an index entry (numpy is imported on first use)."""
    return _dtypes()["ENTRY_DTYPE"]


def __getattr__(name: str):
    if name in ("HEADER_DTYPE", "SLOT_DTYPE", "ENTRY_DTYPE"):
        return _dtypes()[name]
    raise AttributeError(name)


INVALID_INDEX = 0
FIRST_INDEX = 1
DEFAULT_HASH_SLOTS = 5_000_000
DEFAULT_INDEX_NUM = 20_000_000
KEY_SEPARATOR = "#"
NAME_FORMAT = "%Y%m%d%H%M%S"  # followed by 3 digits of milliseconds
NAME_LEN = 17  # yyyyMMddHHmmssSSS


def file_name(timestamp_ms: int) -> str:
    """yyyyMMddHHmmssSSS in local time, as the broker names index files by creation time."""
    secs, ms = divmod(timestamp_ms, 1000)
    return time.strftime(NAME_FORMAT, time.localtime(secs)) + f"{ms:03d}"


def name_time(name: str) -> int:
    """The creation time (ms, local time) an index file's name encodes."""
    secs = time.mktime(time.strptime(name[:-3], NAME_FORMAT))
    return int(secs) * 1000 + int(name[-3:])


def name_after(newest: str | None, stamp: int, taken: Callable[[str], bool] = lambda name: False) -> str:
    """The name of a new index file made at `stamp` (ms) after the `newest` file's name: its own time, or, when
    that is not later (a clock behind the newest file, or a fixed one), the newest file's time plus 1 ms, at
    once; a later one where that name is `taken`."""
    if newest is not None and file_name(stamp) <= newest:
        stamp = name_time(newest) + 1
    name = file_name(stamp)
    while (newest is not None and name <= newest) or taken(name):  # a local-time gap or a name in use
        stamp += 1
        name = file_name(stamp)
    return name


def is_file_name(name: str) -> bool:
    """Whether `name` is an index file's name (17 digits of its creation time)."""
    return len(name) == NAME_LEN and name.isdigit()


def slot_position(slot: int) -> int:
    """Where slot `slot` of the slot table starts: the table follows the header."""
    return HEADER_LEN + slot * SLOT_LEN


def entries_offset(hash_slots: int) -> int:
    """Where entry 0 of a file of `hash_slots` slots starts: the entries follow the whole slot table."""
    return HEADER_LEN + hash_slots * SLOT_LEN


def entry_position(hash_slots: int, n: int) -> int:
    """Where entry `n` of a file of `hash_slots` slots starts."""
    return entries_offset(hash_slots) + n * ENTRY_LEN


def file_names(directory: Path) -> list[str]:
    """The index files of `directory` (a store's index/ folder), oldest first; none when it is missing."""
    try:
        return sorted(e.name for e in os.scandir(directory) if is_file_name(e.name) and e.is_file())
    except OSError:
        return []


def file_len(hash_slots: int, index_num: int) -> int:
    """A file of maxIndexNum entries ends where entry maxIndexNum would start."""
    return entry_position(hash_slots, index_num)


def index_key(topic: str, key: str) -> str:
    return f"{topic}{KEY_SEPARATOR}{key}"


def key_hash(key: str) -> int:
    """abs(String.hashCode) of the index key, 0 for Integer.MIN_VALUE (whose abs stays negative)."""
    h = java_string_hash(key)
    return abs(h) if h != -(2**31) else 0


def slot_of(hash_value: int, hash_slots: int) -> int:
    return hash_value % hash_slots


def decode_header(buf) -> np.void:
    import numpy as np

    return np.frombuffer(buf, dtype=_dtypes()["HEADER_DTYPE"], count=1)[0]


def header_of(buf) -> np.void | None:
    """The header at the start of `buf`, copied out of it (the buffer may close); None when `buf` is shorter."""
    return decode_header(buf).copy() if len(buf) >= HEADER_LEN else None


def read_header(path) -> np.void | None:
    """The header of the index file at `path`, in one read (a store may hold tens of thousands of index
    files); None when the file is shorter than a header."""
    return header_of(read_head(path, HEADER_LEN))


def header_bytes(buf) -> bytes:
    """A copy of the header's bytes at the start of `buf`."""
    return bytes(buf[:HEADER_LEN])


def put_header(buf, raw: bytes) -> None:
    """Write a header's bytes (`header_bytes`, `kernel.new_header`) over the start of `buf`."""
    if len(raw) != HEADER_LEN:
        raise ValueError(f"an index header is {HEADER_LEN} bytes, not {len(raw)}")
    buf[:HEADER_LEN] = raw


def decode_slots(buf, hash_slots: int) -> np.ndarray:
    import numpy as np

    return np.frombuffer(buf, dtype=_dtypes()["SLOT_DTYPE"], count=hash_slots, offset=slot_position(0))


def decode_entries(buf, hash_slots: int, index_count: int) -> np.ndarray:
    """Entries 0 .. index_count-1 (entry 0 is the unused placeholder)."""
    import numpy as np

    return np.frombuffer(buf, dtype=_dtypes()["ENTRY_DTYPE"], count=index_count, offset=entries_offset(hash_slots))


def header_to_json(header: np.void) -> dict:
    return dict(zip(HEADER.names(), header.tolist(), strict=True))
