"""Consume-queue entries (20 bytes: commitLogOffset, size, tagsCode) and the tagsCode rule."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from rmqtool.format import sysflag
from rmqtool.format.delay import SCHEDULE_TOPIC, deliver_timestamp
from rmqtool.format.javahash import java_string_hash
from rmqtool.format.properties import DELAY, TAGS

ENTRY_DTYPE = np.dtype([("commitLogOffset", ">i8"), ("size", ">i4"), ("tagsCode", ">i8")])
ENTRY_LEN = ENTRY_DTYPE.itemsize  # 20
DEFAULT_ENTRIES_PER_FILE = 300_000


def decode_entries(buf) -> np.ndarray:
    """All whole 20-byte entries of `buf` as a structured array (a view, no copy)."""
    n = len(buf) // ENTRY_LEN
    return np.frombuffer(buf, dtype=ENTRY_DTYPE, count=n)


def valid_mask(entries: np.ndarray) -> np.ndarray:
    """Entries the broker counts as written: offset >= 0 and size > 0."""
    return (entries["commitLogOffset"] >= 0) & (entries["size"] > 0)


def written_count(entries: np.ndarray) -> int:
    """Entries before the first invalid one (a queue file is written front to back)."""
    bad = np.flatnonzero(~valid_mask(entries))
    return int(bad[0]) if bad.size else len(entries)


def encode_entries(offsets, sizes, tags_codes) -> bytes:
    out = np.empty(len(offsets), dtype=ENTRY_DTYPE)
    out["commitLogOffset"], out["size"], out["tagsCode"] = offsets, sizes, tags_codes
    return out.tobytes()


def in_consume_queue(sys_flag: int) -> bool:
    """Plain and committed records are dispatched; prepared and rolled-back ones are not."""
    return sysflag.transaction_type(sys_flag) in (sysflag.TRANSACTION_NOT, sysflag.TRANSACTION_COMMIT)


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
