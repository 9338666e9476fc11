"""The one compiled commitlog walker (numba), its record-geometry accessors, and many body CRCs at once.

`walk` follows totalSize from record to record and stops at the first record its policy does
not accept, saying why:
- `POLICY_SCAN` (decode, verify, salvage, export, the engine's own reads): v1 and v2 records
  whose physicalOffset field equals their position; CRCs are checked afterwards in bulk, and
  the scanner's per-record path resynchronizes after a stop.
- `POLICY_BROKER` (recovery): the 4.9 broker's checkMessageAndReturnSize: v1 magic, fields that
  add up to totalSize, the body CRC when asked; the physicalOffset field is not looked at.
Every offset comes from the record layout in `format.message`.
"""

from __future__ import annotations

import numpy as np

from rmqtool.structures.commitlog import impossible, message
from rmqtool.structures.commitlog.crc import POSITIVE_MASK
from rmqtool.structures.commitlog.message import (
    BLANK_MAGIC,
    BLANK_MARKER_LEN,
    BODY_CRC_OFFSET,
    BODY_LENGTH_FROM_HEADER_END,
    HEADER_V4_LEN,
    HOST_V6_EXTRA,
    MAGIC_OFFSET,
    MAGIC_V1,
    MAGIC_V2,
    MIN_RECORD_LEN,
    PHYSICAL_OFFSET_OFFSET,
    PROPERTIES_LEN_LEN,
    QUEUE_ID_OFFSET,
    QUEUE_OFFSET_OFFSET,
    SYS_FLAG_OFFSET,
    TOPIC_LEN_V1_LEN,
    TOPIC_LEN_V2_LEN,
)
from rmqtool.structures.commitlog.properties import MAX_PROPERTIES_LEN
from rmqtool.structures.commitlog.sysflag import BORN_HOST_V6, STORE_HOST_V6
from rmqtool.structures.jit import jitable, kernel
from rmqtool.structures.nbutil import CRC_TABLES, copy_bytes, crc32, get_i32, get_i64

_TABLES = CRC_TABLES

POLICY_SCAN, POLICY_BROKER = 0, 1

# why a walk stopped
STOP_END, STOP_BLANK, STOP_MAGIC, STOP_LENGTH, STOP_CRC, STOP_OFFSET, STOP_WINDOW, STOP_FULL = range(8)
STOP_REASONS = ("end of file", "blank marker", "no message magic (zeros or garbage)",
                "fields do not add up to totalSize", "body CRC mismatch", "physicalOffset is not the position",
                "window end", "output full")

# columns of the geometry a walk writes for every record it passes
GEO_START, GEO_BODY, GEO_TOPIC, GEO_TOPIC_LEN, GEO_PROPS, GEO_PROPS_LEN = range(6)
GEO_COLUMNS = 6


def bytes_work(buf, starts, lengths, *_) -> int:
    """A call over the strings buf[s:s+len] as Python: about a microsecond a byte."""
    return int(lengths.sum())


def _crc_work(buf, starts, lengths, *_) -> int:
    """zlib's CRC as Python: about 100 bytes a microsecond."""
    return int(lengths.sum()) // 100


@jitable(inline=True)
def header_len(flags):
    """Length of a record's fixed fields (bodyLength included) for its sysFlag's host families."""
    head = HEADER_V4_LEN
    if flags & BORN_HOST_V6:
        head += HOST_V6_EXTRA
    if flags & STORE_HOST_V6:
        head += HOST_V6_EXTRA
    return head


# the record rules of `message` and `impossible`, compiled from the same functions
fits = jitable(message.fits, inline=True)
_store_timestamp_offset = jitable(message.store_timestamp_offset, inline=True)
nul_bytes = kernel(nogil=True, work=bytes_work)(impossible.nul_bytes)


@jitable(inline=True)
def store_timestamp_at(pos, flags):
    """Where the storeTimestamp of the record at `pos` is (it follows the born host)."""
    return pos + _store_timestamp_offset(flags)


@jitable(inline=True)
def dispatch_header(buf, pos):
    """(totalSize, sysFlag, queueId, queueOffset, storeTimestamp) of the record at `pos`: the header fields
    a dispatcher reads."""
    flags = get_i32(buf, pos + SYS_FLAG_OFFSET)
    return (get_i32(buf, pos), flags, get_i32(buf, pos + QUEUE_ID_OFFSET), get_i64(buf, pos + QUEUE_OFFSET_OFFSET),
            get_i64(buf, store_timestamp_at(pos, flags)))


def walk_work(nbytes: int) -> int:
    """A walk over `nbytes` of log as Python: about 10 bytes a microsecond."""
    return max(nbytes, 0) // 10


@kernel(nogil=True, work=lambda buf, pos, end, *_: walk_work(min(end, buf.shape[0]) - pos))
def walk(buf, pos, end, base, out, policy, check_crc):
    """Accept records from `pos` on while they start before `end` and `out` has room.

    A row of `out` per record (GEO_* columns; `walker.Rows` names them). Returns (rows written, stop position, why
    (STOP_*), storeTimestamp of the last accepted record or -1). STOP_WINDOW and STOP_FULL
    mean: go on from the stop position.
    """
    size = buf.shape[0]
    cap = out.shape[0]
    broker = policy == POLICY_BROKER
    n = 0
    last_ts = np.int64(-1)
    while True:
        if pos >= end:
            return n, pos, STOP_WINDOW, last_ts
        if n >= cap:
            return n, pos, STOP_FULL, last_ts
        if pos + BLANK_MARKER_LEN > size:
            return n, pos, STOP_END, last_ts
        total = get_i32(buf, pos)
        magic = get_i32(buf, pos + MAGIC_OFFSET)
        if magic == BLANK_MAGIC:
            return n, pos, STOP_BLANK, last_ts
        if magic != MAGIC_V1 and (broker or magic != MAGIC_V2):
            return n, pos, STOP_MAGIC, last_ts
        if total < MIN_RECORD_LEN or total > size - pos:
            return n, pos, STOP_LENGTH, last_ts
        if not broker and get_i64(buf, pos + PHYSICAL_OFFSET_OFFSET) != base + pos:
            return n, pos, STOP_OFFSET, last_ts
        flags = get_i32(buf, pos + SYS_FLAG_OFFSET)
        head = header_len(flags)
        rec_end = pos + total
        if pos + head > rec_end:
            return n, pos, STOP_LENGTH, last_ts
        body_len = get_i32(buf, pos + head - BODY_LENGTH_FROM_HEADER_END)
        body = pos + head
        p = body + body_len
        if body_len < 0 or p + TOPIC_LEN_V1_LEN > rec_end:
            return n, pos, STOP_LENGTH, last_ts
        if magic == MAGIC_V2:
            if p + TOPIC_LEN_V2_LEN > rec_end:
                return n, pos, STOP_LENGTH, last_ts
            topic_len = (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
            p += TOPIC_LEN_V2_LEN
        else:
            topic_len = np.int64(buf[p])
            p += TOPIC_LEN_V1_LEN
        topic = p
        p += topic_len
        if p + PROPERTIES_LEN_LEN > rec_end:
            return n, pos, STOP_LENGTH, last_ts
        props_len = (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
        if props_len > MAX_PROPERTIES_LEN or p + PROPERTIES_LEN_LEN + props_len != rec_end:
            return n, pos, STOP_LENGTH, last_ts
        if check_crc and body_len > 0 and \
                (crc32(buf, body, body_len, _TABLES) & POSITIVE_MASK) != get_i32(buf, pos + BODY_CRC_OFFSET):
            return n, pos, STOP_CRC, last_ts
        out[n, GEO_START] = pos
        out[n, GEO_BODY] = body
        out[n, GEO_TOPIC] = topic
        out[n, GEO_TOPIC_LEN] = topic_len
        out[n, GEO_PROPS] = p + PROPERTIES_LEN_LEN
        out[n, GEO_PROPS_LEN] = props_len
        last_ts = get_i64(buf, store_timestamp_at(pos, flags))
        n += 1
        pos = rec_end


@kernel(nogil=True, work=lambda *_: 0)
def record_at(buf, pos, base, out):
    """Where the record at `pos` ends when the scan policy accepts it (its row written to `out[0]`), else -1."""
    n, stop, _, _ = walk(buf, pos, pos + 1, base, out, POLICY_SCAN, False)
    return stop if n == 1 else -1


@kernel(nogil=True, work=_crc_work)
def crc32_many(buf, starts, lengths, tables):
    """zlib CRC-32 of buf[s:s+len] for every (s, len)."""
    out = np.empty(starts.shape[0], dtype=np.int64)
    for r in range(starts.shape[0]):
        out[r] = crc32(buf, starts[r], lengths[r], tables)
    return out


@kernel(nogil=True, work=bytes_work)
def gather(buf, starts, lengths, out):
    """buf[s:s+len] of every (s, len) copied into `out` one after the other."""
    at = 0
    for r in range(starts.shape[0]):
        s, n = starts[r], lengths[r]
        copy_bytes(out, at, buf, s, n)
        at += n


def gathered(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(data, offsets) of buf[starts[i]:starts[i]+lengths[i]] for every i: the strings one after the other, row i
    at data[offsets[i]:offsets[i+1]]."""
    lengths = lengths.astype(np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.empty(int(offsets[-1]), dtype=np.uint8)
    gather(buf, starts.astype(np.int64), lengths, data)
    return data, offsets


def body_crcs(arr: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """CRC-32 of each body (unmasked), computed in one compiled pass."""
    return crc32_many(arr, starts.astype(np.int64), lengths.astype(np.int64), _TABLES)


_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@kernel(nogil=True, work=bytes_work)
def string_hashes(buf, starts, lengths, out):
    """A 64-bit FNV-1a hash of each string buf[start:start+len] (its length mixed in)."""
    for i in range(starts.shape[0]):
        h = _FNV_OFFSET
        s = starts[i]
        for k in range(lengths[i]):
            h = (h ^ np.uint64(buf[s + k])) * _FNV_PRIME
        out[i] = h ^ np.uint64(lengths[i])


@jitable(inline=True)
def _same(buf, a, b, length):
    """Whether buf[a:a+length] and buf[b:b+length] hold the same bytes."""
    for k in range(length):  # noqa: SIM110 - a loop numba compiles
        if buf[a + k] != buf[b + k]:
            return False
    return True


@kernel(nogil=True, work=bytes_work)
def strings_match(buf, starts, lengths, rep):
    """Whether every string equals the one at index rep[i] (hash groups hold no collision)."""
    for i in range(starts.shape[0]):
        j = rep[i]
        if lengths[i] != lengths[j] or not _same(buf, starts[i], starts[j], lengths[i]):
            return False
    return True


@kernel(nogil=True, work=bytes_work)
def group_equal(buf, starts, lengths, first, ids):
    """Group the strings buf[start:start+len] by their bytes, in order of first appearance: `first[g]` is the
    first record of group g, `ids[i]` the group of record i. Returns the number of groups, or -1 when there
    are more than `first` has room for. A record is compared with the group of the record before it first."""
    n, room = starts.shape[0], first.shape[0]
    groups = 0
    last = -1
    for i in range(n):
        s, length = starts[i], lengths[i]
        if last >= 0 and lengths[first[last]] == length and _same(buf, starts[first[last]], s, length):
            ids[i] = last
            continue
        found = -1
        for g in range(groups):
            if lengths[first[g]] == length and _same(buf, starts[first[g]], s, length):
                found = g
                break
        if found < 0:
            if groups == room:
                return -1
            first[groups] = i
            found = groups
            groups += 1
        ids[i] = found
        last = found
    return groups
