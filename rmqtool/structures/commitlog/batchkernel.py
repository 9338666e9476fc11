"""Re-encoding a client batch (MessageBatch body) into commitlog records, compiled.

Each client item (totalSize, magic, bodyCRC, flag, bodyLength + body, propertiesLength +
properties; `format.batch`) becomes a full record: the batch's fixed fields from a header
template, the item's flag and body, the store's bodyCRC, the batch topic, and the item's
properties followed by the batch properties (with a `\\x02` between them when the item's
own properties do not end with one). Records get consecutive queue offsets and are written
back to back.
"""

from __future__ import annotations

import numpy as np

from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.batch import ITEM_BODY_LEN_AT, ITEM_FLAG_AT, ITEM_HEAD_LEN
from rmqtool.structures.commitlog.crc import POSITIVE_MASK
from rmqtool.structures.commitlog.kernels import fits
from rmqtool.structures.commitlog.properties import MAX_PROPERTIES_LEN, PROPERTY_SEPARATOR
from rmqtool.structures.jit import kernel
from rmqtool.structures.nbutil import CRC_TABLES, copy_bytes, crc32, get_i16, get_i32, put_i16, put_i32, put_i64

_ITEM_FLAG = ITEM_FLAG_AT
_ITEM_BODY_LEN = ITEM_BODY_LEN_AT
_ITEM_HEAD = ITEM_HEAD_LEN
_PROPS_LEN_SIZE = message.PROPERTIES_LEN_LEN
_PAIR_END = ord(PROPERTY_SEPARATOR)
MIN_ITEM_LEN = _ITEM_HEAD + _PROPS_LEN_SIZE
_MAX_TOPIC_LEN = message.MAX_TOPIC_LEN_V1

# status codes of `encode_client_batch`
BATCH_OK, BATCH_MALFORMED, BATCH_PROPERTIES_TOO_LONG = 0, -1, -3


def item_capacity(body_len: int) -> int:
    """Rows the output arrays of `encode_client_batch` need for a batch body of `body_len` bytes: one per
    item it can hold, and one more."""
    return body_len // MIN_ITEM_LEN + 1


@kernel()
def _layout(src, item_pos, item_len, body_len, props_len, batch_props_len, fixed_len):
    """Split the client items; fill per-item arrays. Returns (status, count, total record bytes)."""
    pos = 0
    n = 0
    total = 0
    end = src.shape[0]
    cap = item_pos.shape[0]
    while pos < end:
        if n >= cap or end - pos < MIN_ITEM_LEN:
            return BATCH_MALFORMED, n, total
        blen = get_i32(src, pos + _ITEM_BODY_LEN)
        p = pos + _ITEM_HEAD + blen
        if blen < 0 or p + _PROPS_LEN_SIZE > end:
            return BATCH_MALFORMED, n, total
        plen = get_i16(src, p)
        if plen < 0 or p + _PROPS_LEN_SIZE + plen > end:
            return BATCH_MALFORMED, n, total
        extra = batch_props_len
        if plen > 0 and batch_props_len > 0 and src[p + _PROPS_LEN_SIZE + plen - 1] != _PAIR_END:
            extra += 1
        if plen + extra > MAX_PROPERTIES_LEN:
            return BATCH_PROPERTIES_TOO_LONG, n, total
        item_pos[n] = pos
        body_len[n] = blen
        props_len[n] = plen + extra
        item_len[n] = fixed_len + blen + plen + extra
        total += item_len[n]
        pos = p + _PROPS_LEN_SIZE + plen
        n += 1
    return BATCH_OK, n, total


@kernel(nogil=True)
def encode_client_batch(src, dst, at, room, header, stamps, topic, batch_props, queue_offset, phys, out_offset,
                        out_size):
    """Write the batch in `src` as records at dst[at:] (physical offset `phys`).

    `header` is a `message.batch_header_template`; `stamps` holds (queueId, bornTimestamp,
    storeTimestamp, where storeTimestamp is in a record), written into every record.
    Returns (status, count, total bytes). Nothing is written unless the whole batch fits with
    room for a blank marker after it (total + 8 <= room); then the caller rolls the segment.
    `out_offset` / `out_size` receive each record's physical offset and size.
    """
    n_cap = out_offset.shape[0]
    item_pos = np.empty(n_cap, dtype=np.int64)
    body_len = np.empty(n_cap, dtype=np.int64)
    props_len = np.empty(n_cap, dtype=np.int64)
    hlen = header.shape[0]
    fixed_len = hlen + message.TOPIC_LEN_V1_LEN + topic.shape[0] + _PROPS_LEN_SIZE
    status, n, total = _layout(src, item_pos, out_size, body_len, props_len, batch_props.shape[0], fixed_len)
    if status != BATCH_OK or not fits(total, room):
        return status, n, total
    w = at
    for r in range(n):
        s = item_pos[r]
        blen = body_len[r]
        size = out_size[r]
        copy_bytes(dst, w, header, 0, hlen)
        put_i32(dst, w + message.TOTAL_SIZE_OFFSET, size)
        put_i32(dst, w + message.QUEUE_ID_OFFSET, stamps[0])
        put_i64(dst, w + message.BORN_TIMESTAMP_OFFSET, stamps[1])
        put_i64(dst, w + stamps[3], stamps[2])
        put_i32(dst, w + message.BODY_CRC_OFFSET, crc32(src, s + _ITEM_HEAD, blen, CRC_TABLES) & POSITIVE_MASK)
        copy_bytes(dst, w + message.FLAG_OFFSET, src, s + _ITEM_FLAG, 4)
        put_i64(dst, w + message.QUEUE_OFFSET_OFFSET, queue_offset + r)
        out_offset[r] = phys + (w - at)
        put_i64(dst, w + message.PHYSICAL_OFFSET_OFFSET, out_offset[r])
        put_i32(dst, w + hlen - message.BODY_LENGTH_FROM_HEADER_END, blen)
        p = w + hlen
        copy_bytes(dst, p, src, s + _ITEM_HEAD, blen)
        p += blen
        dst[p] = topic.shape[0]
        p += 1
        copy_bytes(dst, p, topic, 0, topic.shape[0])
        p += topic.shape[0]
        put_i16(dst, p, props_len[r])
        p += _PROPS_LEN_SIZE
        own = s + _ITEM_HEAD + blen + _PROPS_LEN_SIZE
        own_len = get_i16(src, own - _PROPS_LEN_SIZE)
        copy_bytes(dst, p, src, own, own_len)
        p += own_len
        if props_len[r] > own_len + batch_props.shape[0]:
            dst[p] = _PAIR_END
            p += 1
        copy_bytes(dst, p, batch_props, 0, batch_props.shape[0])
        w += size
    return BATCH_OK, n, total
