"""Consume-queue entries (20 bytes: commitLogOffset, size, tagsCode), the tagsCode rule, and the refusal
of a queue that is not there (one text for every consume-queue form)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rmqtool.errors import NoSuchQueue
from rmqtool.structures.commitlog import sysflag
from rmqtool.structures.commitlog.delay import SCHEDULE_TOPIC, deliver_timestamp
from rmqtool.structures.commitlog.properties import DELAY, TAGS, parse_java
from rmqtool.structures.javahash import java_string_hash
from rmqtool.structures.layout import Layout

if TYPE_CHECKING:
    import numpy as np

ENTRY = Layout.of(("commitLogOffset", ">i8"), ("size", ">i4"), ("tagsCode", ">i8"))
ENTRY_LEN = ENTRY.size  # 20; numpy is imported on first use, not by the CLI's start


@functools.cache
def entry_dtype() -> np.dtype:

    return ENTRY.dtype()


def __getattr__(name: str):
    if name == "ENTRY_DTYPE":
        return entry_dtype()
    raise AttributeError(name)
DEFAULT_ENTRIES_PER_FILE = 300_000
FILLER_SIZE = 0x7FFFFFFF  # the size of the entries a queue that starts past 0 is pre-filled with
DEFAULT_FILE_SIZE = DEFAULT_ENTRIES_PER_FILE * ENTRY_LEN  # the broker's mappedFileSizeConsumeQueue: 6,000,000


def filler_entries(n: int) -> bytes:
    """`n` filler entries (0, Integer.MAX_VALUE, 0): what the broker writes before the first entry of a queue
    whose first file starts past 0."""
    return ENTRY.codec.pack(0, FILLER_SIZE, 0) * n


def byte_of(queue_offset):
    """Where entry `queue_offset` starts in its queue's bytes (entry k at k x 20; an int or an int array)."""
    return queue_offset * ENTRY_LEN


def whole_entries(nbytes):
    """How many whole entries `nbytes` bytes hold (a partial entry does not count)."""
    return nbytes // ENTRY_LEN


def queue_offset_of(byte):
    """The queue offset of the entry that holds byte `byte` of its queue."""
    return whole_entries(byte)


def round_up_to_entry(nbytes: int) -> int:
    """`nbytes` moved up to the end of the entry it ends in (an entry may end in zero bytes)."""
    return byte_of(-(-nbytes // ENTRY_LEN))


def file_start_of(queue_offset: int, file_size: int) -> int:
    """The start (the name) of the queue file of `file_size` bytes that holds entry `queue_offset`."""
    at = byte_of(queue_offset)
    return at - at % file_size


def entry_at(buf, i: int) -> tuple[int, int, int]:
    """Entry `i` of `buf`: (commitLogOffset, size, tagsCode)."""
    return ENTRY.codec.unpack_from(buf, byte_of(i))


def decode_entries(buf) -> np.ndarray:
    """All whole 20-byte entries of `buf` as a structured array (a view, no copy)."""
    n = len(buf) // ENTRY_LEN
    import numpy as np

    return np.frombuffer(buf, dtype=entry_dtype(), count=n)


def valid_mask(entries: np.ndarray) -> np.ndarray:
    """Entries the broker counts as written: offset >= 0 and size > 0."""
    return (entries["commitLogOffset"] >= 0) & (entries["size"] > 0)


def written_count(entries: np.ndarray) -> int:
    """Entries before the first invalid one (a queue file is written front to back): `written_entries`
    of the array's bytes."""
    return written_entries(memoryview(entries).cast("B")) if len(entries) else 0


_CHUNK_ENTRIES = 4096  # how much of a queue file `written_entries` reads at a time
_SIGN_SET = re.compile(rb"[\x80-\xff]")
_SIZE_AT = ENTRY.offset("size")


def written_entries(buf) -> int:
    """How many entries of a queue file's bytes the broker reads as written: those before the first whose
    commitLogOffset is negative or whose size is not positive. Read a chunk at a time from the front
    (the pages past the written part of a preallocated file are never touched), each field checked
    across the chunk at once in C (no numpy: a point lookup starts faster without it): a sign bit is a
    high first byte, a zero size four zero bytes."""
    n = len(buf) // ENTRY_LEN
    at = 0
    while at < n:
        end = min(at + _CHUNK_ENTRIES, n)
        chunk = bytes(buf[byte_of(at) : byte_of(end)])
        count = end - at
        first = count
        for sign in (chunk[0::ENTRY_LEN], chunk[_SIZE_AT::ENTRY_LEN]):
            found = _SIGN_SET.search(sign)
            if found is not None:
                first = min(first, found.start())
        size_bytes = 0
        for k in range(4):
            size_bytes |= int.from_bytes(chunk[_SIZE_AT + k :: ENTRY_LEN], "big")
        zero = size_bytes.to_bytes(count, "big").find(0)
        if zero >= 0:
            first = min(first, zero)
        if first < count:
            return at + first
        at = end
    return n


def first_at_or_after(buf, n: int, log_start: int) -> int:
    """The first of the `n` written entries of `buf` that points at or past `log_start` (`n` when none
    does): where the broker's queue begins once the log's head before `log_start` is gone. Entries
    point forward in the log, so a binary search finds it with a few reads."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if entry_at(buf, mid)[0] >= log_start:
            hi = mid
        else:
            lo = mid + 1
    return lo


def encode_entries(offsets, sizes, tags_codes) -> bytes:
    import numpy as np

    out = np.empty(len(offsets), dtype=entry_dtype())
    out["commitLogOffset"], out["size"], out["tagsCode"] = offsets, sizes, tags_codes
    return out.tobytes()


def tags_code(topic: str, props: Mapping[str, str], store_timestamp: int, levels_ms: list[int]) -> int:
    """The tagsCode the broker dispatches: TAGS hash, or the delivery time on the schedule topic."""
    code = 0
    tags = props.get(TAGS)
    if tags:
        code = java_string_hash(tags)
    level_text = props.get(DELAY)
    if topic == SCHEDULE_TOPIC and level_text is not None:
        try:
            level = min(int(level_text), len(levels_ms))
        except ValueError:
            return code
        if level > 0:
            code = deliver_timestamp(level, store_timestamp, levels_ms)
    return code


def record_tags_code(msg, levels_ms: list[int]) -> int | None:
    """The consume-queue tagsCode of a record (a `message.Message`), None when it is not dispatched."""
    if not sysflag.enters_consume_queue(msg.sys_flag):
        return None
    return tags_code(msg.topic, parse_java(msg.properties_string), msg.store_timestamp, levels_ms)


def queue_keys(topic_ids, queue_ids):
    """One int64 per (topic id, queue id) pair: the topic in the high 32 bits, the queue's 32 bits below
    (`queue_of_key` takes the queue back, sign included)."""
    import numpy as np

    return (np.asarray(topic_ids, dtype=np.int64) << 32) | (np.asarray(queue_ids, dtype=np.int64) & 0xFFFFFFFF)


def queue_of_key(key: int) -> int:
    q = key & 0xFFFFFFFF
    return q - (1 << 32) if q & 0x80000000 else q


def missing_queue(topics: Iterable[str], root: Path, topic: str, queue_id: int) -> NoSuchQueue:
    """The refusal of queue `topic`/`queue_id`, which the store at `root` (holding `topics`) does not have."""
    known = ", ".join(topics) or "none"
    return NoSuchQueue(f"no consume queue {topic}/{queue_id} in {root} (topics: {known})")
