"""The broker's recovery check of commitlog records (CommitLog.checkMessageAndReturnSize), compiled.

Recovery accepts a record when its magic is the v1 message magic, its fields add up to its
totalSize within the file, and (when checkCRCOnRecover) its body CRC matches; a blank
marker ends the segment. It does not look at the physicalOffset field. The walk stops at
the first record it does not accept, as the broker's recovery does.
"""

from __future__ import annotations

from numba import njit

from rmqtool.format import message, sysflag
from rmqtool.format.crc import POSITIVE_MASK
from rmqtool.format.hosts import IPV4_LEN, IPV6_LEN
from rmqtool.format.nbutil import CRC_TABLES, crc32, get_i16, get_i32

_V6_EXTRA = IPV6_LEN - IPV4_LEN

# why a walk stopped
STOP_END, STOP_BLANK, STOP_MAGIC, STOP_LENGTH, STOP_CRC, STOP_WINDOW = 0, 1, 2, 3, 4, 5
STOP_REASONS = ("end of file", "blank marker", "no message magic (zeros or garbage)",
                "fields do not add up to totalSize", "body CRC mismatch", "window end")


@njit(cache=True, nogil=True)
def recovery_walk(buf, pos, check_crc, limit):
    """Accept records from `pos` on, starting before `limit`; returns (stop position, why, records
    accepted, last storeTimestamp). STOP_WINDOW means: continue from the returned position."""
    size = buf.shape[0]
    n = 0
    last_ts = -1
    while True:
        if pos >= limit:
            return pos, STOP_WINDOW, n, last_ts
        if pos + 8 > size:
            return pos, STOP_END, n, last_ts
        total = get_i32(buf, pos)
        magic = get_i32(buf, pos + message.MAGIC_OFFSET)
        if magic == message.BLANK_MAGIC:
            return pos, STOP_BLANK, n, last_ts
        if magic != message.MAGIC_V1:
            return pos, STOP_MAGIC, n, last_ts
        if total < message.MIN_RECORD_LEN or pos + total > size:
            return pos, STOP_LENGTH, n, last_ts
        flags = get_i32(buf, pos + message.SYS_FLAG_OFFSET)
        head = message.HEADER_V4_LEN
        if flags & sysflag.BORN_HOST_V6:
            head += _V6_EXTRA
        if flags & sysflag.STORE_HOST_V6:
            head += _V6_EXTRA
        if head > total:
            return pos, STOP_LENGTH, n, last_ts
        body_len = get_i32(buf, pos + head - message.BODY_LENGTH_FROM_HEADER_END)
        if body_len < 0 or head + body_len + 1 > total:
            return pos, STOP_LENGTH, n, last_ts
        if check_crc and body_len > 0:
            crc = crc32(buf, pos + head, body_len, CRC_TABLES) & POSITIVE_MASK
            if crc != get_i32(buf, pos + message.BODY_CRC_OFFSET):
                return pos, STOP_CRC, n, last_ts
        topic_len = buf[pos + head + body_len]
        p = pos + head + body_len + 1 + topic_len
        if p + 2 > pos + total:
            return pos, STOP_LENGTH, n, last_ts
        props_len = get_i16(buf, p)
        if head + body_len + 1 + topic_len + 2 + props_len != total:
            return pos, STOP_LENGTH, n, last_ts
        ts_at = pos + message.STORE_TIMESTAMP_V4_OFFSET + (_V6_EXTRA if flags & sysflag.BORN_HOST_V6 else 0)
        last_ts = (get_i32(buf, ts_at) << 32) | (get_i32(buf, ts_at + 4) & 0xFFFFFFFF)
        n += 1
        pos += total
