"""Many records as columns, encoded to commitlog bytes in one compiled pass.

`RecordColumns` holds what a stored record carries, one array per field, with the
variable parts (bodies, topics, properties) as one byte buffer plus offsets each. The
kernel writes every fixed field at its offset in the record layout (`message.HEADER_LAYOUTS`,
later fields moved by the IPv6 host bits as the layout moves them), the store's bodyCRC and
the offsets the caller planned, then body, topic and properties. Bulk import and the
Spark load write through here; the per-record encoder writes the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rmqtool.structures.commitlog import message, sysflag
from rmqtool.structures.commitlog.crc import POSITIVE_MASK
from rmqtool.structures.commitlog.hosts import IPV4_LEN, IPV6_LEN
from rmqtool.structures.jit import kernel
from rmqtool.structures.nbutil import CRC_TABLES, copy_bytes, crc32, put_i32, put_i64

_TOPIC_LEN_SIZE = message.TOPIC_LEN_V1_LEN
_PROPS_LEN_SIZE = message.PROPERTIES_LEN_LEN
_B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


@dataclass
class RecordColumns:
    """n records' fields. Addresses are (n, 16) byte rows (IPv4 in the first 4 bytes, as
    the sysFlag host bits say); bodies, topics and properties are (buffer, start, length)."""

    queue_id: np.ndarray
    flag: np.ndarray
    sys_flag: np.ndarray
    born_timestamp: np.ndarray
    born_address: np.ndarray
    born_port: np.ndarray
    store_timestamp: np.ndarray
    store_address: np.ndarray
    store_port: np.ndarray
    reconsume_times: np.ndarray
    prepared_offset: np.ndarray
    body_buf: np.ndarray
    body_start: np.ndarray
    body_len: np.ndarray
    topic_buf: np.ndarray
    topic_start: np.ndarray
    topic_len: np.ndarray
    props_buf: np.ndarray
    props_start: np.ndarray
    props_len: np.ndarray

    def __len__(self) -> int:
        return len(self.queue_id)

    def lengths(self) -> np.ndarray:
        """totalSize of every record (the host bits of sysFlag decide the header size)."""
        head = np.full(len(self), message.HEADER_V4_LEN, dtype=np.int64)
        extra = message.HOST_V6_EXTRA
        head += np.where(self.sys_flag & sysflag.BORN_HOST_V6, extra, 0)
        head += np.where(self.sys_flag & sysflag.STORE_HOST_V6, extra, 0)
        return head + self.body_len + _TOPIC_LEN_SIZE + self.topic_len + _PROPS_LEN_SIZE + self.props_len

    def encode_into(self, dst: np.ndarray, at: int, queue_offset: np.ndarray, physical_offset: np.ndarray,
                    first: int, last: int) -> int:
        """Write records first..last-1 back to back at dst[at:] with their planned queue and physical
        offsets (and the store's bodyCRC); returns the bytes written."""
        return _encode(dst, at, self.lengths(), self.queue_id, self.flag, self.sys_flag, self.born_timestamp,
                       self.born_address, self.born_port, self.store_timestamp, self.store_address, self.store_port,
                       self.reconsume_times, self.prepared_offset, queue_offset, physical_offset, self.body_buf,
                       self.body_start, self.body_len, self.topic_buf, self.topic_start, self.topic_len,
                       self.props_buf, self.props_start, self.props_len, first, last)


_V4 = message.HEADER_LAYOUTS[(False, False)]
_TOTAL, _MAGIC, _QID, _FLAG = (_V4.offset(n) for n in ("totalSize", "magicCode", "queueId", "flag"))
_QOFF, _POFF, _SYSFLAG, _BORN_TS = (_V4.offset(n) for n in ("queueOffset", "physicalOffset", "sysFlag",
                                                            "bornTimestamp"))
_BORN_ADDR = _V4.offset("bornAddress")
# fields after bornAddress move by HOST_V6_EXTRA with an IPv6 born host; after storeAddress, again with an IPv6 store
_BORN_PORT, _STORE_TS, _STORE_ADDR = (_V4.offset(n) for n in ("bornPort", "storeTimestamp", "storeAddress"))
_STORE_PORT, _RECONSUME, _PREPARED, _BODY_LEN = (_V4.offset(n) for n in ("storePort", "reconsumeTimes",
                                                                         "preparedTransactionOffset", "bodyLength"))
_V6_EXTRA = message.HOST_V6_EXTRA
_BORN_V6, _STORE_V6 = sysflag.BORN_HOST_V6, sysflag.STORE_HOST_V6


@kernel(nogil=True)
def _encode(dst, at, lengths, queue_id, flag, sys_flag, born_ts, born_addr, born_port, store_ts, store_addr,
            store_port, reconsume, prepared, queue_offset, physical_offset, body_buf, body_start, body_len,
            topic_buf, topic_start, topic_len, props_buf, props_start, props_len, first, last):
    w = at
    for r in range(first, last):
        sf = sys_flag[r]
        put_i32(dst, w + _TOTAL, lengths[r])
        put_i32(dst, w + _MAGIC, message.MAGIC_V1)
        b0, bn = body_start[r], body_len[r]
        put_i32(dst, w + message.BODY_CRC_OFFSET, crc32(body_buf, b0, bn, CRC_TABLES) & POSITIVE_MASK)
        put_i32(dst, w + _QID, queue_id[r])
        put_i32(dst, w + _FLAG, flag[r])
        put_i64(dst, w + _QOFF, queue_offset[r])
        put_i64(dst, w + _POFF, physical_offset[r])
        put_i32(dst, w + _SYSFLAG, sf)
        put_i64(dst, w + _BORN_TS, born_ts[r])
        shift = 0
        if sf & _BORN_V6:
            dst[w + _BORN_ADDR:w + _BORN_ADDR + IPV6_LEN] = born_addr[r, :IPV6_LEN]
            shift = _V6_EXTRA
        else:
            dst[w + _BORN_ADDR:w + _BORN_ADDR + IPV4_LEN] = born_addr[r, :IPV4_LEN]
        put_i32(dst, w + shift + _BORN_PORT, born_port[r])
        put_i64(dst, w + shift + _STORE_TS, store_ts[r])
        p = w + shift + _STORE_ADDR
        if sf & _STORE_V6:
            dst[p:p + IPV6_LEN] = store_addr[r, :IPV6_LEN]
            shift += _V6_EXTRA
        else:
            dst[p:p + IPV4_LEN] = store_addr[r, :IPV4_LEN]
        put_i32(dst, w + shift + _STORE_PORT, store_port[r])
        put_i32(dst, w + shift + _RECONSUME, reconsume[r])
        put_i64(dst, w + shift + _PREPARED, prepared[r])
        put_i32(dst, w + shift + _BODY_LEN, bn)
        p = w + shift + _BODY_LEN + 4
        copy_bytes(dst, p, body_buf, b0, bn)
        p += bn
        t0, tn = topic_start[r], topic_len[r]
        dst[p] = tn
        p += _TOPIC_LEN_SIZE
        dst[p:p + tn] = topic_buf[t0:t0 + tn]
        p += tn
        q0, qn = props_start[r], props_len[r]
        dst[p] = (qn >> 8) & 0xFF
        dst[p + 1] = qn & 0xFF
        p += _PROPS_LEN_SIZE
        copy_bytes(dst, p, props_buf, q0, qn)
        w = p + qn
    return w - at


def _b64_table() -> np.ndarray:
    t = np.full(256, -(1 << 30), dtype=np.int64)  # any invalid character makes the group negative
    for i, c in enumerate(_B64):
        t[c] = i
    return t


_B64_TABLE = _b64_table()


@kernel(nogil=True)
def b64decode_many(src, off, out, out_off, table):
    """Decode each base64 string src[off[i]:off[i+1]] into out; returns the index of the first bad one, or -1."""
    w = 0
    out_off[0] = 0
    for i in range(off.shape[0] - 1):
        s, e = off[i], off[i + 1]
        if (e - s) % 4:
            return i
        pad = 0
        if e > s and src[e - 1] == ord("="):
            pad = 2 if src[e - 2] == ord("=") else 1
        full = e - 4 if pad else e
        k = s
        while k < full:  # whole groups: four characters, three bytes
            v = (table[src[k]] << 18) | (table[src[k + 1]] << 12) | (table[src[k + 2]] << 6) | table[src[k + 3]]
            if v < 0:
                return i
            out[w] = (v >> 16) & 0xFF
            out[w + 1] = (v >> 8) & 0xFF
            out[w + 2] = v & 0xFF
            w += 3
            k += 4
        if pad:
            a, b = table[src[k]], table[src[k + 1]]
            c = table[src[k + 2]] if pad == 1 else 0
            if a < 0 or b < 0 or c < 0:
                return i
            v = (a << 18) | (b << 12) | (c << 6)
            out[w] = (v >> 16) & 0xFF
            w += 1
            if pad == 1:
                out[w] = (v >> 8) & 0xFF
                w += 1
        out_off[i + 1] = w
    return -1


def b64decode_column(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(bytes, offsets, first bad index or -1) of many base64 strings at once."""
    out = np.empty(max(len(data) * 3 // 4, 1), dtype=np.uint8)
    out_off = np.empty(len(offsets), dtype=np.int64)
    bad = b64decode_many(data, offsets.astype(np.int64), out, out_off, _B64_TABLE)
    return out, out_off, bad
