"""Rows of an input turned into the records a store writes, in bulk, checked against the rules.

Two kinds of rows, one result (`LoadChunk`):
- producer rows (topic, optional queueId, body as bytes or base64 text or bodyText, tags,
  keys, properties, bornTimestamp, bornHost, storeHost, flag, delayLevel) become what a
  producer would send and the store write: properties from tags, keys and the row's own
  pairs in Java HashMap order, a UNIQ_KEY unless the row brings one, the load's store time;
- records as stored (an export: propertiesString, storeTimestamp, hosts, flags kept) become
  the same record again, with the export's commitLogOffset for as-stored placement.

Two things of a producer row may only be known once the load is planned: the queue of a row
that names none, and the row's number in the load that its UNIQ_KEY is made of; the chunk
leaves room for both and `LoadChunk.finish` fills them in. A bad row is reported as data
(row, field, reason), never as an exception halfway through.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqtool.engine.commitlog import schedule
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.producer import DEFAULT_BORN_HOST, DEFAULT_STORE_HOST, client_properties
from rmqtool.engine.rules import SEPARATORS, size_refusals, topic_refusal
from rmqtool.errors import RmqError
from rmqtool.files.scratch import load_arrays, save_arrays
from rmqtool.io.buffers import string_buffers
from rmqtool.load.planner import NO_QUEUE
from rmqtool.structures.commitlog import properties, sysflag, uniqkey
from rmqtool.structures.commitlog.columns import RecordColumns, b64decode_column
from rmqtool.structures.commitlog.hosts import SocketAddress, address_len, parse_host
from rmqtool.structures.commitlog.propskernel import build_properties
from rmqtool.structures.commitlog.uniqkernel import put_load_keys
from rmqtool.structures.javahash import java_string_hash

MAX_ERRORS = 20  # bad rows reported per chunk
_PLACEHOLDER = "0" * uniqkey.LEN
_UNIQ_MARK = properties.UNIQ_KEY + properties.NAME_VALUE_SEPARATOR
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

Assign = Callable[[list[str], np.ndarray, np.ndarray], np.ndarray]  # (topics, topic_idx, queue) -> queue ids


@dataclass(frozen=True)
class LoadOptions:
    cfg: StoreConfig
    store_timestamp: int
    queues: int = 4  # a producer's default queue count for a new topic
    queue_by: str | None = None  # a column whose Java hash picks the queue of a row that names none
    store_host: SocketAddress | None = None  # of rows that name none (None: DEFAULT_STORE_HOST)


@dataclass(frozen=True)
class RowError:
    row: int  # in the batch
    field: str
    reason: str


class RowErrors:
    """Bad rows found so far (at most MAX_ERRORS)."""

    def __init__(self) -> None:
        self.found: list[RowError] = []

    def flag(self, mask, field: str, reason: str) -> None:
        if np.any(mask):
            for row in np.flatnonzero(mask)[: MAX_ERRORS - len(self.found)].tolist():
                self.found.append(RowError(row, field, reason))

    def row(self, row: int, field: str, reason: str) -> None:
        if len(self.found) < MAX_ERRORS:
            self.found.append(RowError(row, field, reason))


@dataclass
class LoadChunk:
    """Rows of a load as record columns, waiting for their queues and unique keys."""

    cols: RecordColumns
    topics: np.ndarray  # the chunk's record topics (str)
    topic_idx: np.ndarray  # each row's index into `topics`
    queue: np.ndarray  # the row's queue, or NO_QUEUE
    uniq_at: np.ndarray  # where in cols.props_buf the row's UNIQ_KEY digits go, -1 when the row brought one
    born_ip4: np.ndarray  # (n, 4): the address a unique key starts with
    stored_offset: np.ndarray | None = None  # as-stored records: the commitLogOffset they had
    delayed: dict[str, int] | None = None  # real topic -> queues it needs, of rows moved to the schedule topic

    def __len__(self) -> int:
        return len(self.queue)

    def finish(self, queue_id: np.ndarray, row_base: int, stamp: tuple[int, int]) -> None:
        """Set the planned queues and write each row's unique key (rows numbered from `row_base`)."""
        self.cols.queue_id = np.asarray(queue_id, dtype=np.int64)
        rows = np.flatnonzero(self.uniq_at >= 0)
        if len(rows):
            put_load_keys(self.cols.props_buf, self.uniq_at[rows], self.born_ip4[rows], stamp, row_base + rows)

    def save(self, path) -> None:
        arrays = {f.name: getattr(self.cols, f.name) for f in fields(RecordColumns)}
        save_arrays(path, topics=self.topics, topic_idx=self.topic_idx, queue=self.queue, uniq_at=self.uniq_at,
                    born_ip4=self.born_ip4, **arrays)

    @classmethod
    def load(cls, path) -> LoadChunk:
        z = load_arrays(path)
        cols = RecordColumns(**{f.name: z[f.name] for f in fields(RecordColumns)})
        return cls(cols, z["topics"], z["topic_idx"], z["queue"], z["uniq_at"], z["born_ip4"])


# ---- columns shared by both kinds of rows ------------------------------------------------------
def _column(batch, name: str):
    return batch.column(name) if name in batch.schema.names else None


def _ints(batch, name: str, errors: RowErrors, bounds: tuple[int, int], default) -> np.ndarray:
    col = _column(batch, name)
    n = batch.num_rows
    if col is None:
        return np.full(n, default, dtype=np.int64)
    if not pa.types.is_integer(col.type):
        try:
            col = pc.cast(col, pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            text = pc.cast(col, pa.string())
            good = pc.fill_null(pc.match_substring_regex(text, r"^\s*-?\d+\s*$"), True)
            errors.flag(~good.to_numpy(zero_copy_only=False), name, "must be an integer")
            col = pc.cast(pc.if_else(good, text, pa.scalar(None, pa.string())), pa.int64())
    out = pc.fill_null(col, default).to_numpy(zero_copy_only=False).astype(np.int64)
    if col.null_count < n:
        low, high = bounds
        given = pc.is_valid(col).to_numpy(zero_copy_only=False)
        errors.flag(given & ((out < low) | (out > high)), name, f"out of range [{low}, {high}]")
    return out


def _hosts(batch, name: str, default, errors: RowErrors):
    """(address rows (n, 16), port, is IPv6) of a host column; a missing host is `default`."""
    col = _column(batch, name)
    n = batch.num_rows
    if col is None:
        texts, idx = [None], np.zeros(n, dtype=np.int64)
    else:
        enc = pc.dictionary_encode(pc.cast(col, pa.string()))
        texts = [*enc.dictionary.to_pylist(), None]
        idx = pc.fill_null(enc.indices, len(texts) - 1).to_numpy(zero_copy_only=False).astype(np.int64)
    addr = np.zeros((len(texts), address_len(True)), dtype=np.uint8)
    port = np.zeros(len(texts), dtype=np.int64)
    v6 = np.zeros(len(texts), dtype=bool)
    for k, text in enumerate(texts):
        try:
            host = parse_host(text) if text is not None else default
        except RmqError as e:
            errors.flag(idx == k, name, str(e))
            host = default
        addr[k, : len(host.address)] = np.frombuffer(host.address, dtype=np.uint8)
        port[k], v6[k] = host.port, host.is_v6
    return addr[idx], port[idx], v6[idx]


@dataclass
class _Topics:
    names: list[str]
    idx: np.ndarray  # per row; -1 where missing
    buf: np.ndarray
    lens: np.ndarray
    starts: np.ndarray

    @classmethod
    def of(cls, names: list[str], idx: np.ndarray) -> _Topics:
        encoded = [t.encode("utf-8") for t in names]
        lens = np.array([len(b) for b in encoded], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
        return cls(names, idx, np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8), lens, starts)


def _topics(batch, errors: RowErrors) -> _Topics | None:
    """The topic of every row (dictionary-encoded), each distinct name checked once."""
    col = _column(batch, "topic")
    if col is None:
        errors.row(0, "topic", "missing (no topic column)")
        return None
    enc = pc.dictionary_encode(pc.cast(col, pa.string()))
    names = enc.dictionary.to_pylist()
    idx = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    errors.flag(idx < 0, "topic", "missing")
    for k, name in enumerate(names):
        bad = topic_refusal(name)
        if bad is not None:
            errors.flag(idx == k, "topic", bad.reason)
    return _Topics.of(names, idx)


def _base64(col, errors: RowErrors, field: str, hint: str = "") -> tuple[np.ndarray, np.ndarray] | None:
    b64, b64_off = string_buffers(pc.fill_null(col, ""))
    out, out_off, bad = b64decode_column(b64, b64_off)
    if bad >= 0:
        errors.row(bad, field, "not valid base64" + hint)
        return None
    return out, out_off


def _sized(cols: RecordColumns, cfg: StoreConfig, errors: RowErrors) -> None:
    """Flag every record a size rule refuses."""
    for mask, refusal in size_refusals(cfg, cols.body_len, cols.props_len, cols.lengths()):
        errors.flag(mask, refusal.field, refusal.reason)


def _columns(n: int, topics: _Topics, body, props, hosts, ints: dict, queue_id: np.ndarray,
             sys_flag: np.ndarray) -> RecordColumns:
    (body_buf, body_off), (props_buf, props_off) = body, props
    (born_addr, born_port, born_v6), (store_addr, store_port, store_v6) = hosts
    sys_flag = sys_flag & ~(sysflag.BORN_HOST_V6 | sysflag.STORE_HOST_V6)
    sys_flag |= np.where(born_v6, sysflag.BORN_HOST_V6, 0) | np.where(store_v6, sysflag.STORE_HOST_V6, 0)
    idx = np.maximum(topics.idx, 0)
    return RecordColumns(
        queue_id=queue_id, flag=ints["flag"], sys_flag=sys_flag.astype(np.int64),
        born_timestamp=ints["bornTimestamp"], born_address=born_addr, born_port=born_port,
        store_timestamp=ints["storeTimestamp"], store_address=store_addr, store_port=store_port,
        reconsume_times=ints.get("reconsumeTimes", np.zeros(n, dtype=np.int64)),
        prepared_offset=ints.get("preparedTransactionOffset", np.zeros(n, dtype=np.int64)),
        body_buf=body_buf, body_start=body_off[:-1].copy(), body_len=np.diff(body_off),
        topic_buf=topics.buf, topic_start=topics.starts[idx], topic_len=topics.lens[idx],
        props_buf=props_buf, props_start=props_off[:-1].copy(), props_len=np.diff(props_off))


# ---- records as stored -------------------------------------------------------------------------
def stored_chunk(batch, cfg: StoreConfig) -> LoadChunk | list[RowError]:
    """The records of an export, as they were stored."""
    n = batch.num_rows
    errors = RowErrors()
    topics = _topics(batch, errors)
    props_col = _column(batch, "propertiesString")
    if props_col is None:
        errors.row(0, "propertiesString", "missing (no propertiesString column)")
    else:
        errors.flag(pc.is_null(props_col).to_numpy(zero_copy_only=False), "propertiesString", "missing")
    ints = {name: _ints(batch, name, errors, _INT32, 0) for name in ("queueId", "flag", "sysFlag", "reconsumeTimes")}
    ints |= {name: _ints(batch, name, errors, _INT64, 0)
             for name in ("bornTimestamp", "storeTimestamp", "preparedTransactionOffset")}
    errors.flag(ints["queueId"] < 0, "queueId", "negative")
    hosts = (_hosts(batch, "bornHost", DEFAULT_STORE_HOST, errors), _hosts(batch, "storeHost", DEFAULT_STORE_HOST,
                                                                               errors))
    body_col = _column(batch, "body")
    body_col = pa.nulls(n, pa.large_binary()) if body_col is None else body_col
    if pa.types.is_string(body_col.type) or pa.types.is_large_string(body_col.type):  # JSONL: base64 text
        body = _base64(body_col, errors, "body")
    else:  # Parquet: the stored bytes
        body = string_buffers(pc.fill_null(body_col, b""))
    stored_offset = None
    offset_col = _column(batch, "commitLogOffset")
    if offset_col is not None and offset_col.null_count < n:
        errors.flag(pc.is_null(offset_col).to_numpy(zero_copy_only=False), "commitLogOffset", "missing")
        stored_offset = _ints(batch, "commitLogOffset", errors, (0, _INT64[1]), -1)
    if errors.found:
        return errors.found
    props = string_buffers(props_col)
    cols = _columns(n, topics, body, props, hosts, ints, ints["queueId"], ints["sysFlag"])
    _sized(cols, cfg, errors)
    if errors.found:
        return errors.found
    no_key = np.full(n, -1, dtype=np.int64)
    return LoadChunk(cols, np.array(topics.names, dtype=str), topics.idx, ints["queueId"], no_key,
                     np.zeros((n, address_len(False)), dtype=np.uint8), stored_offset)


# ---- producer rows -----------------------------------------------------------------------------
def _bodies(batch, errors: RowErrors):
    """(bytes, n + 1 offsets): body (binary, or base64 text), else bodyText, else empty."""
    n = batch.num_rows
    body, text = _column(batch, "body"), _column(batch, "bodyText")
    parts = pa.nulls(n, pa.large_binary())
    if text is not None:
        parts = pc.cast(text, pa.large_binary())
    if body is not None:
        if pa.types.is_string(body.type) or pa.types.is_large_string(body.type):
            decoded = _base64(body, errors, "body", " (use bodyText for plain text)")
            if decoded is None:
                return None
            out, out_off = decoded
            decoded = pa.LargeBinaryArray.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(out_off),
                                                                                 pa.py_buffer(out)])
        else:
            decoded = body  # the bytes as they are (string_buffers reads them without a copy)
        if text is not None:
            decoded = pc.if_else(pc.is_valid(body), pc.cast(decoded, pa.large_binary()), parts)
        parts = decoded
    return string_buffers(parts)


def _words(batch, errors: RowErrors) -> pa.Array:
    """The KEYS value of each row: its words joined by one space (null: none)."""
    col = _column(batch, "keys")
    n = batch.num_rows
    if col is None:
        return pa.nulls(n, pa.string())
    if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
        joined = pc.binary_join(col, properties.KEY_SEPARATOR)
    elif _single_words(pc.cast(col, pa.string())):
        joined = pc.cast(col, pa.string())  # one word each: nothing to split or join
    else:
        col = pc.cast(col, pa.string())
        listed = pc.starts_with(pc.utf8_ltrim_whitespace(pc.fill_null(col, "")), "[")
        joined = pc.binary_join(pc.utf8_split_whitespace(col), properties.KEY_SEPARATOR)
        if pc.any(listed).as_py():  # a JSON list kept as text (by the line reader, or Spark's string column)
            values = joined.to_pylist()
            for row in np.flatnonzero(listed.to_numpy(zero_copy_only=False)).tolist():
                try:
                    words = json.loads(col[row].as_py())
                    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
                        raise ValueError
                    values[row] = properties.KEY_SEPARATOR.join(words)
                except ValueError:
                    errors.row(row, "keys", "must be a string or a list of strings")
            joined = pa.array(values, pa.string())
    return pc.if_else(pc.equal(joined, ""), pa.scalar(None, pa.string()), joined)


def _single_words(col) -> bool:
    """Whether every value is one ASCII word: nothing a split on whitespace or a JSON list would change."""
    buf, off = string_buffers(col)
    used = buf[off[0] : off[-1]]
    if used.size == 0:
        return True
    if used.max() >= 0x80 or (used <= 0x20).any():  # control, space, or non-ASCII (maybe Unicode space)
        return False
    starts = off[:-1][np.diff(off) > 0] - off[0]
    return not (used[starts] == ord("[")).any()


def _user_properties(batch, errors: RowErrors) -> list[dict[str, str] | None] | None:
    """Each row's own properties (map, struct, or JSON text), None where it has none; None when no row has any."""
    col = _column(batch, "properties")
    n = batch.num_rows
    if col is None or col.null_count == n:
        return None
    out: list[dict[str, str] | None] = []
    for row, v in enumerate(col.to_pylist()):
        if isinstance(v, str):
            try:
                v = json.loads(v) if v.strip() else None
            except ValueError:
                errors.row(row, "properties", "not a JSON object")
                v = None
        if isinstance(v, list):  # a map comes as (name, value) pairs
            v = dict(v)
        if isinstance(v, dict):
            v = {k: x for k, x in v.items() if x is not None}
            if not all(isinstance(x, str) for x in v.values()):
                errors.row(row, "properties", "values must be strings")
                v = None
        elif v is not None:
            errors.row(row, "properties", "must be an object of string values")
            v = None
        out.append(v or None)
    return out


_SEPARATOR_BYTES = [ord(c) for c in SEPARATORS]


def _has_separator(arr) -> np.ndarray:
    """Rows whose text holds a separator character (one pass over the bytes, not one per row)."""
    buf, off = string_buffers(arr)
    hit = np.zeros(len(arr), dtype=bool)
    found = np.flatnonzero(np.isin(buf[off[0] : off[-1]], _SEPARATOR_BYTES)) + off[0]
    if len(found):
        hit[np.searchsorted(off, found, side="right") - 1] = True
    return hit


def _uniq_at(text: str) -> int:
    """Byte offset of the UNIQ_KEY placeholder's digits in a properties string."""
    at = 0 if text.startswith(_UNIQ_MARK) else text.index(properties.PROPERTY_SEPARATOR + _UNIQ_MARK) + 1
    return len(text[: at + len(_UNIQ_MARK)].encode("utf-8"))


def producer_chunk(batch, opts: LoadOptions, assign: Assign | None = None) -> LoadChunk | list[RowError]:
    """The producer rows of one batch as a chunk, or the first bad rows. With `assign` (a
    sequential load: queues are known as rows are built) delayed rows are moved to the schedule
    topic as the broker moves them; without it they are refused."""
    n = batch.num_rows
    cfg = opts.cfg
    errors = RowErrors()
    topics = _topics(batch, errors)
    if topics is None:
        return errors.found
    delay = _ints(batch, "delayLevel", errors, (0, _INT32[1]), 0)
    queue_id = _ints(batch, "queueId", errors, (0, _INT32[1]), NO_QUEUE)
    ints = {"flag": _ints(batch, "flag", errors, _INT32, 0),
            "bornTimestamp": _ints(batch, "bornTimestamp", errors, _INT64, opts.store_timestamp),
            "storeTimestamp": np.full(n, opts.store_timestamp, dtype=np.int64)}
    store_host = opts.store_host or DEFAULT_STORE_HOST
    hosts = (_hosts(batch, "bornHost", DEFAULT_BORN_HOST, errors), _hosts(batch, "storeHost", store_host, errors))
    body = _bodies(batch, errors)
    tags_col = _column(batch, "tags")
    tags = pa.nulls(n, pa.string()) if tags_col is None else pc.cast(tags_col, pa.string())
    tags = pc.if_else(pc.equal(tags, ""), pa.scalar(None, pa.string()), tags)
    keys = _words(batch, errors)
    errors.flag(_has_separator(tags), "tags", "holds a separator character (\\x01 or \\x02)")
    errors.flag(_has_separator(keys), "keys", "holds a separator character (\\x01 or \\x02)")
    user = _user_properties(batch, errors)
    if opts.queue_by is not None:
        queue_id = _queue_by_hash(batch, opts, queue_id, errors)
    if assign is None:
        errors.flag(delay > 0, "delayLevel", "delayed rows are loaded by rmqtool import and append, not here")
    if errors.found:
        return errors.found
    if assign is not None:
        queue_id = assign(topics.names, topics.idx, queue_id)

    has_user = np.zeros(n, dtype=bool) if user is None else np.array([u is not None for u in user], dtype=bool)
    own = has_user | (delay > 0)
    delayed: dict[str, int] = {}
    texts: list[str] = []
    own_uniq: list[int] = []
    if own.any():
        tag_list, key_list = tags.to_pylist(), keys.to_pylist()
        for row in np.flatnonzero(own).tolist():
            try:
                text = client_properties(tags=tag_list[row], keys=key_list[row], user=user and user[row],
                                         delay_level=int(delay[row]), uniq=_PLACEHOLDER)
            except RmqError as e:
                errors.row(row, "properties", str(e))
                continue
            moved = schedule(text, topics.names[topics.idx[row]], int(queue_id[row]), len(cfg.delay_levels_ms))
            if moved is not None:
                if assign is None:
                    errors.row(row, "properties", "DELAY: delayed rows are loaded by rmqtool import and append, "
                                                  "not here")
                    continue
                real, real_queues = topics.names[topics.idx[row]], int(queue_id[row]) + 1
                delayed[real] = max(delayed.get(real, 0), real_queues)
                text, topic, queue_id[row] = moved
                topics = _moved(topics, row, topic)
            texts.append(text)
            given = user is not None and properties.UNIQ_KEY in (user[row] or {})
            own_uniq.append(-1 if given else _uniq_at(text))
        if errors.found:
            return errors.found
    props_buf, props_off, uniq_at = build_properties(
        (*string_buffers(tags), pc.is_valid(tags).to_numpy(zero_copy_only=False)),
        (*string_buffers(keys), pc.is_valid(keys).to_numpy(zero_copy_only=False)),
        own, string_buffers(pa.array(texts, pa.large_string())), uniqkey.LEN)
    if texts:
        relative = np.array(own_uniq, dtype=np.int64)
        uniq_at[own] = np.where(relative >= 0, props_off[:-1][own] + relative, -1)
    cols = _columns(n, topics, body, (props_buf, props_off), hosts, ints, queue_id.copy(),
                    np.zeros(n, dtype=np.int64))
    _sized(cols, cfg, errors)
    if errors.found:
        return errors.found
    born_addr, born_v6 = hosts[0][0], hosts[0][2]
    return LoadChunk(cols, np.array(topics.names, dtype=str), topics.idx, queue_id, uniq_at,
                     uniqkey.address_parts(born_addr, born_v6), delayed=delayed or None)


def _moved(topics: _Topics, row: int, topic: str) -> _Topics:
    """`topics` with row `row` on `topic` (added to the names when new)."""
    names = topics.names
    if topic not in names:
        names = [*names, topic]
        topics = _Topics.of(names, topics.idx)
    topics.idx[row] = names.index(topic)
    return topics


def _queue_by_hash(batch, opts: LoadOptions, queue_id: np.ndarray, errors: RowErrors) -> np.ndarray:
    """Rows that name no queue take |javaHash(value) % queues| of the --queue-by column (Java's
    remainder keeps the hash's sign, so its absolute value is |hash| % queues)."""
    col = _column(batch, opts.queue_by)
    if col is None:
        errors.row(0, opts.queue_by, "the --queue-by column is not in the input")
        return queue_id
    enc = pc.dictionary_encode(pc.cast(col, pa.string()))
    hashes = np.array([abs(java_string_hash(v)) % opts.queues for v in enc.dictionary.to_pylist()] + [-1],
                      dtype=np.int64)
    idx = pc.fill_null(enc.indices, len(hashes) - 1).to_numpy(zero_copy_only=False).astype(np.int64)
    picked = hashes[idx]
    return np.where((queue_id == NO_QUEUE) & (picked >= 0), picked, queue_id)
