"""The 5.x RocksDB consume queue: the keys and values its two column families hold.

`default` maps one queue entry per key:
    key   = topicLen(i4) 0x01 topic 0x01 queueId(i4) 0x01 queueOffset(i8)
    value = commitLogOffset(i8) size(i4) tagsCode(i8) storeTimestamp(i8)       (28 bytes)
`offset` keeps each queue's bounds:
    key   = topicLen(i4) 0x01 topic 0x01 "max"|"min" 0x01 queueId(i4)
    value = commitLogOffset(i8) queueOffset(i8)                                 (16 bytes)
plus one key of topic `CHECKPOINT_TOPIC` whose 8-byte value is the highest dispatched
physical offset. All integers are big-endian; keys of one queue sort by queue offset.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from rmqtool.structures.layout import Layout

SEPARATOR = b"\x01"  # between key parts
AFTER_SEPARATOR = b"\x02"  # sorts after every key that continues with a separator
DEFAULT_FAMILY, OFFSET_FAMILY = "default", "offset"
CHECKPOINT_TOPIC = "CHECKPOINT_TOPIC"
MAX_TAG, MIN_TAG = b"max", b"min"

VALUE = Layout.of(("commitLogOffset", ">i8"), ("size", ">i4"), ("tagsCode", ">i8"), ("storeTimestamp", ">i8"))
VALUE_LEN = VALUE.size  # 28
BOUND = Layout.of(("commitLogOffset", ">i8"), ("queueOffset", ">i8"))
BOUND_LEN = BOUND.size  # 16
_TOPIC_LEN = struct.Struct(">i")
_QUEUE_ID = struct.Struct(">i")
_QUEUE_OFFSET = struct.Struct(">q")
_PHY_OFFSET = struct.Struct(">q")


def queue_prefix(topic: str, queue_id: int) -> bytes:
    """The bytes every entry key of topic/queue_id starts with."""
    raw = topic.encode("utf-8")
    return _TOPIC_LEN.pack(len(raw)) + SEPARATOR + raw + SEPARATOR + _QUEUE_ID.pack(queue_id) + SEPARATOR


def entry_key(topic: str, queue_id: int, queue_offset: int) -> bytes:
    return queue_prefix(topic, queue_id) + _QUEUE_OFFSET.pack(queue_offset)


def bound_key(topic: str, queue_id: int, tag: bytes) -> bytes:
    """The offset-table key of topic/queue_id's `max` or `min` row."""
    raw = topic.encode("utf-8")
    return _TOPIC_LEN.pack(len(raw)) + SEPARATOR + raw + SEPARATOR + tag + SEPARATOR + _QUEUE_ID.pack(queue_id)


def after_queue(prefix: bytes) -> bytes:
    """A key above every entry key of the queue `prefix` names and below the next queue's."""
    return prefix[:-1] + AFTER_SEPARATOR


@dataclass(frozen=True)
class EntryKey:
    topic: str
    queue_id: int
    queue_offset: int
    prefix_len: int  # bytes of the key before the queue offset


def parse_entry_key(key: bytes) -> EntryKey | None:
    """The parts of an entry key; None when the bytes are not one."""
    if len(key) < _TOPIC_LEN.size + 1:
        return None
    (n,) = _TOPIC_LEN.unpack_from(key, 0)
    head = _TOPIC_LEN.size + 1 + n + 1
    if n < 0 or len(key) != head + _QUEUE_ID.size + 1 + _QUEUE_OFFSET.size:
        return None
    if key[4:5] != SEPARATOR or key[head - 1 : head] != SEPARATOR or key[head + 4 : head + 5] != SEPARATOR:
        return None
    topic = key[5 : 5 + n].decode("utf-8", "replace")
    (queue_id,) = _QUEUE_ID.unpack_from(key, head)
    (queue_offset,) = _QUEUE_OFFSET.unpack_from(key, head + 5)
    return EntryKey(topic, queue_id, queue_offset, head + 5)


def decode_value(value: bytes) -> tuple[int, int, int, int] | None:
    """(commitLogOffset, size, tagsCode, storeTimestamp); None when the value is not 28 bytes."""
    return VALUE.codec.unpack(value) if len(value) == VALUE_LEN else None


@dataclass(frozen=True)
class Bound:
    """One row of the offset table: the min or max entry of a queue."""

    topic: str
    queue_id: int
    kind: str  # "max" or "min"
    commit_log_offset: int
    queue_offset: int


def parse_bound(key: bytes, value: bytes) -> Bound | int | None:
    """An offset-table row; the checkpoint row gives its physical offset (an int); None: not a row."""
    if len(key) < _TOPIC_LEN.size + 1:
        return None
    (n,) = _TOPIC_LEN.unpack_from(key, 0)
    head = _TOPIC_LEN.size + 1 + n + 1
    if n < 0 or len(key) != head + len(MAX_TAG) + 1 + _QUEUE_ID.size:
        return None
    topic = key[5 : 5 + n].decode("utf-8", "replace")
    tag = key[head : head + len(MAX_TAG)]
    if tag not in (MAX_TAG, MIN_TAG):
        return None
    (queue_id,) = _QUEUE_ID.unpack_from(key, head + len(MAX_TAG) + 1)
    if topic == CHECKPOINT_TOPIC and len(value) == _PHY_OFFSET.size:
        return _PHY_OFFSET.unpack(value)[0]
    if len(value) != BOUND_LEN:
        return None
    phy, qoff = BOUND.codec.unpack(value)
    return Bound(topic, queue_id, tag.decode(), phy, qoff)
