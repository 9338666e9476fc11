"""What the broker's dispatcher takes from each record, for many records in one compiled pass.

For every record the walk found: its consume-queue entry (offset, size, tagsCode, queueId,
queueOffset), whether it enters a consume queue and the index (by transaction type), its
storeTimestamp, and the Java hash of every index key `topic#key` (UNIQ_KEY first, then each
KEYS word). Properties are read as Java's `string2messageProperties` reads them: a pair needs
a non-empty name and value, and a later pair overwrites an earlier one of the same name.
"""

from __future__ import annotations

import numpy as np

from rmqtool.structures.commitlog import sysflag
from rmqtool.structures.commitlog.kernels import dispatch_header
from rmqtool.structures.commitlog.pairs import pair_at
from rmqtool.structures.commitlog.properties import (
    DELAY,
    KEYS,
    TAGS,
    UNIQ_KEY,
)
from rmqtool.structures.commitlog.properties import KEY_SEPARATOR as WORD_SEPARATOR
from rmqtool.structures.commitlog.walker import Rows
from rmqtool.structures.consumequeue.tagskernel import tags_code_at
from rmqtool.structures.index import KEY_SEPARATOR
from rmqtool.structures.jit import jitable, kernel
from rmqtool.structures.nbutil import bytes_equal, java_hash_step, java_hash_utf8, to_java_int

enters_consume_queue = jitable(sysflag.enters_consume_queue)

# columns of the rows `dispatch_fields` writes
D_OFFSET, D_SIZE, D_QUEUE_ID, D_QUEUE_OFFSET, D_STORE_TS, D_TAGS_CODE, D_IN_CQ, D_INDEXED = range(8)
D_COLUMNS = 8

_WORD_END = ord(WORD_SEPARATOR)
_KEY_JOIN = ord(KEY_SEPARATOR)
_TAGS = np.frombuffer(TAGS.encode(), dtype=np.uint8)
_KEYS = np.frombuffer(KEYS.encode(), dtype=np.uint8)
_UNIQ = np.frombuffer(UNIQ_KEY.encode(), dtype=np.uint8)
_DELAY = np.frombuffer(DELAY.encode(), dtype=np.uint8)
_KEYS_GUESS = 4  # index keys per record to make room for at first
_INT_MAX = 2**31 - 1


@jitable
def _key_hash(buf, topic_hash, start, end):
    h = java_hash_step(topic_hash, _KEY_JOIN)
    h = to_java_int(java_hash_utf8(buf, start, end, h))
    h = abs(h)
    return h if h <= _INT_MAX else 0  # abs(Integer.MIN_VALUE) stays negative in Java: the broker uses 0


def _dispatch_work(buf, start, topic, topic_len, props, props_len, n, *_) -> int:
    """As Python: about 2.5 microseconds a byte of the properties and topics."""
    return int(props_len[:n].sum() + topic_len[:n].sum()) * 5 // 2


@kernel(nogil=True, work=_dispatch_work)
def dispatch_fields(buf, start, topic, topic_len, props, props_len, n, base, levels, out, key_rec, key_hash):
    """Fill `out[:n]` (D_* columns) and the index keys of the records whose geometry the walk gave
    (`start` ... `props_len`, one per record); returns the number of keys found.

    When that number exceeds the key arrays, only the first keys were stored: call again
    with larger arrays. With empty key arrays no key is looked for (and 0 returned).
    """
    cap = key_rec.shape[0]
    nkeys = 0
    for r in range(n):
        pos = start[r]
        size, flags, queue_id, queue_offset, store_ts = dispatch_header(buf, pos)
        tx = flags & sysflag.TRANSACTION_MASK
        out[r, D_OFFSET] = base + pos
        out[r, D_SIZE] = size
        out[r, D_QUEUE_ID] = queue_id
        out[r, D_QUEUE_OFFSET] = queue_offset
        out[r, D_STORE_TS] = store_ts
        out[r, D_IN_CQ] = 1 if enters_consume_queue(flags) else 0
        out[r, D_INDEXED] = 0 if tx == sysflag.TRANSACTION_ROLLBACK else 1
        # the last occurrence of each property that matters (Java's map keeps the last)
        tags_s = tags_e = keys_s = keys_e = uniq_s = uniq_e = delay_s = delay_e = -1
        p = props[r]
        end = p + props_len[r]
        while p < end:
            k, q = pair_at(buf, p, end)
            if p < k < q - 1:
                if bytes_equal(buf, p, k - p, _TAGS):
                    tags_s, tags_e = k + 1, q
                elif bytes_equal(buf, p, k - p, _KEYS):
                    keys_s, keys_e = k + 1, q
                elif bytes_equal(buf, p, k - p, _UNIQ):
                    uniq_s, uniq_e = k + 1, q
                elif bytes_equal(buf, p, k - p, _DELAY):
                    delay_s, delay_e = k + 1, q
            p = q + 1
        topic_s = topic[r]
        topic_n = topic_len[r]
        out[r, D_TAGS_CODE] = tags_code_at(buf, topic_s, topic_n, tags_s, tags_e, delay_s, delay_e, store_ts, levels)
        if cap == 0 or out[r, D_INDEXED] == 0 or (uniq_s < 0 and keys_s < 0):
            continue
        topic_hash = java_hash_utf8(buf, topic_s, topic_s + topic_n, 0)
        if uniq_s >= 0:
            if nkeys < cap:
                key_rec[nkeys] = r
                key_hash[nkeys] = _key_hash(buf, topic_hash, uniq_s, uniq_e)
            nkeys += 1
        if keys_s >= 0:
            w = keys_s
            while w <= keys_e:
                e = w
                while e < keys_e and buf[e] != _WORD_END:
                    e += 1
                if e > w:
                    if nkeys < cap:
                        key_rec[nkeys] = r
                        key_hash[nkeys] = _key_hash(buf, topic_hash, w, e)
                    nkeys += 1
                w = e + 1
    return nkeys


class Dispatched:
    """What `dispatch_records` found, by name: per-record columns (views of the kernel's rows, `D_*`) and
    the index keys (`key_rec`: the record of each key, `key_hash`: its hash)."""

    def __init__(self, fields: np.ndarray, key_rec: np.ndarray, key_hash: np.ndarray) -> None:
        self._fields, self.key_rec, self.key_hash = fields, key_rec, key_hash

    def __len__(self) -> int:
        return len(self._fields)

    @property
    def offset(self) -> np.ndarray:
        """Each record's commitlog offset."""
        return self._fields[:, D_OFFSET]

    @property
    def size(self) -> np.ndarray:
        """Each record's totalSize."""
        return self._fields[:, D_SIZE]

    @property
    def queue_id(self) -> np.ndarray:
        return self._fields[:, D_QUEUE_ID]

    @property
    def queue_offset(self) -> np.ndarray:
        return self._fields[:, D_QUEUE_OFFSET]

    @property
    def store_ts(self) -> np.ndarray:
        return self._fields[:, D_STORE_TS]

    @property
    def tags_code(self) -> np.ndarray:
        """The consume-queue entry's tagsCode (a delayed message's delivery time)."""
        return self._fields[:, D_TAGS_CODE]

    @property
    def in_cq(self) -> np.ndarray:
        """1 where the record enters a consume queue (by its transaction type), else 0."""
        return self._fields[:, D_IN_CQ]

    @property
    def indexed(self) -> np.ndarray:
        """1 where the record's keys enter the index, else 0."""
        return self._fields[:, D_INDEXED]

    @property
    def key_offsets(self) -> np.ndarray:
        """The commitlog offset of each index key's record (a copy)."""
        return self._fields[self.key_rec, D_OFFSET]

    def queue_entries(self) -> np.ndarray:
        """(offset, size, tagsCode) rows: each record's consume-queue entry (a copy)."""
        return self._fields[:, [D_OFFSET, D_SIZE, D_TAGS_CODE]]


def dispatch_room(n: int) -> np.ndarray:
    """Room for the rows of `n` records, to pass to `dispatch_records` again and again."""
    return np.empty((n, D_COLUMNS), dtype=np.int64)


def dispatch_records(buf, rows: Rows, base: int, levels: np.ndarray,
                     room: np.ndarray | None = None, *, keys: bool = True) -> Dispatched:
    """Run `dispatch_fields` over the records `rows` describes (rows of a walk), growing the key
    arrays until every key fits. `room` (from `dispatch_room`) is reused when large enough. Without
    `keys` the index keys are not hashed (the queue entries alone: an export's tagsCode)."""
    n = len(rows)
    fields = room if room is not None and len(room) >= n else dispatch_room(n)
    cap = n * _KEYS_GUESS + 16 if keys else 0
    key_rec, key_hash = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
    while True:
        nkeys = dispatch_fields(buf, rows.start, rows.topic, rows.topic_len, rows.props, rows.props_len, n, base,
                                levels, fields, key_rec, key_hash)
        if nkeys <= len(key_rec):
            return Dispatched(fields[:n], key_rec[:nkeys], key_hash[:nkeys])
        key_rec, key_hash = np.empty(nkeys, dtype=np.int64), np.empty(nkeys, dtype=np.int64)
