"""Compiled inner loops of the scanner (numba): the record walk and many body CRCs at once.

The walk follows totalSize from record to record, as the broker's reader does, and stops at
the first record that is not a well-formed message at its own offset; the scanner's
per-record path takes over there. Offsets and sizes come from `format.message`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rmqtool.format.hosts import IPV4_LEN, IPV6_LEN
from rmqtool.format.message import (
    HEADER_V4_LEN,
    MAGIC_OFFSET,
    MAGIC_V1,
    MAGIC_V2,
    MIN_RECORD_LEN,
    PHYSICAL_OFFSET_OFFSET,
    SYS_FLAG_OFFSET,
)
from rmqtool.format.nbutil import CRC_TABLES, crc32, get_i32, get_i64
from rmqtool.format.sysflag import BORN_HOST_V6, STORE_HOST_V6

_V6_EXTRA = IPV6_LEN - IPV4_LEN
_BODY_LEN_FROM_END = 4  # bodyLength is the last fixed field
_TABLES = CRC_TABLES


# columns of the geometry a walk writes for every record it passes
GEO_START, GEO_BODY, GEO_TOPIC, GEO_TOPIC_LEN, GEO_PROPS, GEO_PROPS_LEN = range(6)
GEO_COLUMNS = 6


@njit(cache=True, nogil=True)
def walk(buf, pos, end, base, out):
    """Sound records from `pos` on, while they start before `end`.

    A row of `out` per record: start, body position, topic position, topic length,
    properties position, properties length. Returns (rows written, position where the
    walk stopped).
    """
    size = buf.shape[0]
    n = 0
    cap = out.shape[0]
    while pos < end and n < cap:
        if pos + MIN_RECORD_LEN > size:
            break
        total = get_i32(buf, pos)
        magic = get_i32(buf, pos + MAGIC_OFFSET)
        if magic != MAGIC_V1 and magic != MAGIC_V2:
            break
        if total < MIN_RECORD_LEN or total > size - pos:
            break
        if get_i64(buf, pos + PHYSICAL_OFFSET_OFFSET) != base + pos:
            break
        flags = get_i32(buf, pos + SYS_FLAG_OFFSET)
        head = HEADER_V4_LEN
        if flags & BORN_HOST_V6:
            head += _V6_EXTRA
        if flags & STORE_HOST_V6:
            head += _V6_EXTRA
        rec_end = pos + total
        if pos + head > rec_end:
            break
        body_len = get_i32(buf, pos + head - _BODY_LEN_FROM_END)
        body = pos + head
        p = body + body_len
        if body_len < 0 or p + 1 > rec_end:
            break
        if magic == MAGIC_V2:
            if p + 2 > rec_end:
                break
            topic_len = (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
            p += 2
        else:
            topic_len = np.int64(buf[p])
            p += 1
        topic = p
        p += topic_len
        if p + 2 > rec_end:
            break
        props_len = (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
        if props_len >= 0x8000 or p + 2 + props_len != rec_end:
            break
        out[n, 0] = pos
        out[n, 1] = body
        out[n, 2] = topic
        out[n, 3] = topic_len
        out[n, 4] = p + 2
        out[n, 5] = props_len
        n += 1
        pos = rec_end
    return n, pos


@njit(cache=True, nogil=True)
def crc32_many(buf, starts, lengths, tables):
    """zlib CRC-32 of buf[s:s+len] for every (s, len)."""
    out = np.empty(starts.shape[0], dtype=np.int64)
    for r in range(starts.shape[0]):
        out[r] = crc32(buf, starts[r], lengths[r], tables)
    return out


def body_crcs(arr: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """CRC-32 of each body (unmasked), computed in one compiled pass."""
    return crc32_many(arr, starts.astype(np.int64), lengths.astype(np.int64), _TABLES)
