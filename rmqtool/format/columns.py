"""Many records as columns, encoded to commitlog bytes in one compiled pass.

`RecordColumns` holds what a stored record carries, one array per field, with the
variable parts (bodies, topics, properties) as one byte buffer plus offsets each. Fixed
fields become header rows through the same numpy dtype the scanner reads them with
(`message.header_dtype`); the kernel copies each row, fills in totalSize, bodyCRC and the
offsets the caller planned, then appends body, topic and properties. Bulk import and the
Spark load write through here; the per-record encoder writes the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from rmqtool.format import message, sysflag
from rmqtool.format.crc import POSITIVE_MASK
from rmqtool.format.hosts import IPV4_LEN, IPV6_LEN
from rmqtool.format.nbutil import CRC_TABLES, crc32, put_i32

_MAX_HEADER = message.header_len(sysflag.BORN_HOST_V6 | sysflag.STORE_HOST_V6)
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

    def headers(self, queue_offset: np.ndarray, physical_offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows of header bytes padded to the IPv6 size, header length per record); bodyCRC left 0."""
        n = len(self)
        rows = np.zeros((n, _MAX_HEADER), dtype=np.uint8)
        head_len = np.empty(n, dtype=np.int64)
        lengths = self.lengths()
        born_v6 = (self.sys_flag & sysflag.BORN_HOST_V6) != 0
        store_v6 = (self.sys_flag & sysflag.STORE_HOST_V6) != 0
        for b6 in (False, True):
            for s6 in (False, True):
                sel = np.flatnonzero((born_v6 == b6) & (store_v6 == s6))
                if not len(sel):
                    continue
                dt = message.header_dtype(b6, s6)
                h = np.zeros(len(sel), dtype=dt)
                h["totalSize"] = lengths[sel]
                h["magicCode"] = message.MAGIC_V1
                h["queueId"] = self.queue_id[sel]
                h["flag"] = self.flag[sel]
                h["queueOffset"] = queue_offset[sel]
                h["physicalOffset"] = physical_offset[sel]
                h["sysFlag"] = self.sys_flag[sel]
                h["bornTimestamp"] = self.born_timestamp[sel]
                h["bornAddress"] = _addresses(self.born_address[sel], b6)
                h["bornPort"] = self.born_port[sel]
                h["storeTimestamp"] = self.store_timestamp[sel]
                h["storeAddress"] = _addresses(self.store_address[sel], s6)
                h["storePort"] = self.store_port[sel]
                h["reconsumeTimes"] = self.reconsume_times[sel]
                h["preparedTransactionOffset"] = self.prepared_offset[sel]
                h["bodyLength"] = self.body_len[sel]
                rows[sel, : dt.itemsize] = h.view(np.uint8).reshape(len(sel), dt.itemsize)
                head_len[sel] = dt.itemsize
        return rows, head_len


def _addresses(rows: np.ndarray, v6: bool) -> np.ndarray:
    width = IPV6_LEN if v6 else IPV4_LEN
    return np.ascontiguousarray(rows[:, :width]).view(f"V{width}").ravel()


@njit(cache=True, nogil=True)
def encode_records(dst, at, rows, head_len, body_buf, body_start, body_len, topic_buf, topic_start, topic_len,
                   props_buf, props_start, props_len, first, last):
    """Write records first..last-1 back to back at dst[at:] from prepared header rows; returns bytes written."""
    w = at
    for r in range(first, last):
        hl = head_len[r]
        dst[w:w + hl] = rows[r, :hl]
        b0, bn = body_start[r], body_len[r]
        put_i32(dst, w + message.BODY_CRC_OFFSET, crc32(body_buf, b0, bn, CRC_TABLES) & POSITIVE_MASK)
        p = w + hl
        dst[p:p + bn] = body_buf[b0:b0 + bn]
        p += bn
        t0, tn = topic_start[r], topic_len[r]
        dst[p] = tn
        p += _TOPIC_LEN_SIZE
        dst[p:p + tn] = topic_buf[t0:t0 + tn]
        p += tn
        q0, qn = props_start[r], props_len[r]
        dst[p] = (qn >> 8) & 0xFF
        dst[p + 1] = qn & 0xFF
        p += 2
        dst[p:p + qn] = props_buf[q0:q0 + qn]
        w = p + qn
    return w - at


def _b64_table() -> np.ndarray:
    t = np.full(256, -(1 << 30), dtype=np.int64)  # any invalid character makes the group negative
    for i, c in enumerate(_B64):
        t[c] = i
    return t


_B64_TABLE = _b64_table()


@njit(cache=True, nogil=True)
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
