"""The client batch body (MessageBatch): per message totalSize, magic, bodyCRC, flag,
bodyLength + body, propertiesLength + properties. Clients write 0 for magic and bodyCRC."""

from __future__ import annotations

import struct
from typing import NamedTuple

from rmqtool.structures.layout import Layout

ITEM = Layout.of(("totalSize", ">i4"), ("magic", ">i4"), ("bodyCRC", ">i4"), ("flag", ">i4"), ("bodyLength", ">i4"))
ITEM_HEAD_LEN = ITEM.size  # the fixed part; body, propertiesLength and properties follow
ITEM_FLAG_AT, ITEM_BODY_LEN_AT = ITEM.offset("flag"), ITEM.offset("bodyLength")
_HEAD = ITEM.codec
_PROPS_LEN = struct.Struct(">h")
PROPS_LEN_LEN = _PROPS_LEN.size


class BatchItem(NamedTuple):
    flag: int
    body: bytes
    properties_string: str


def encode_item(item: BatchItem) -> bytes:
    props = item.properties_string.encode("utf-8")
    total = _HEAD.size + len(item.body) + _PROPS_LEN.size + len(props)
    return _HEAD.pack(total, 0, 0, item.flag, len(item.body)) + item.body + _PROPS_LEN.pack(len(props)) + props


def encode(items: list[BatchItem]) -> bytes:
    return b"".join(encode_item(i) for i in items)


def decode(buf) -> list[BatchItem]:
    """Split a batch body; ValueError when an item's lengths do not add up."""
    items, pos, end = [], 0, len(buf)
    while pos < end:
        if end - pos < _HEAD.size + _PROPS_LEN.size:
            raise ValueError(f"batch body truncated at byte {pos}")
        total, _, _, flag, body_len = _HEAD.unpack_from(buf, pos)
        p = pos + _HEAD.size
        if body_len < 0 or p + body_len + _PROPS_LEN.size > end:
            raise ValueError(f"bad bodyLength {body_len} in batch item at byte {pos}")
        body = bytes(buf[p : p + body_len])
        p += body_len
        (props_len,) = _PROPS_LEN.unpack_from(buf, p)
        p += _PROPS_LEN.size
        if props_len < 0 or p + props_len > end or p + props_len - pos != total:
            raise ValueError(f"batch item at byte {pos}: totalSize {total} does not match its fields")
        items.append(BatchItem(flag, body, bytes(buf[p : p + props_len]).decode("utf-8", "replace")))
        pos = p + props_len
    return items
