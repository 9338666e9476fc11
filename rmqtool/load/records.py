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
(row, field, reason), never as an exception halfway through. A column is taken only as the type
docs/json-schema.md gives its field (never cast from another: a topic 5 is refused, not "5"),
text only as UTF-8, integers only in the range of their width on disk (`rules.INT_RANGES`).
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
from rmqtool.engine.rules import (
    NOT_UTF8,
    SEPARATORS,
    Refusal,
    is_utf8,
    out_of_range,
    range_reason,
    sent_topic_refusal,
    size_refusals,
    topic_refusal,
)
from rmqtool.errors import RmqError
from rmqtool.files.scratch import load_arrays, save_arrays
from rmqtool.io.buffers import string_buffers
from rmqtool.io.schema import INT_MUST, KEYS_MUST, NULL_PROPERTY, PROPERTIES_MUST, TEXT_MUST
from rmqtool.io.textkernels import utf8_valid
from rmqtool.load.planner import NO_QUEUE
from rmqtool.structures.commitlog import properties, sysflag, uniqkey
from rmqtool.structures.commitlog.columns import RecordColumns, b64decode_column
from rmqtool.structures.commitlog.hosts import SocketAddress, address_len, parse_host
from rmqtool.structures.commitlog.propskernel import build_properties
from rmqtool.structures.commitlog.uniqkernel import put_load_keys
from rmqtool.structures.javahash import java_string_hash
from rmqtool.structures.layout import JAVA_LONG_MAX, JAVA_LONG_MIN

MAX_ERRORS = 20  # bad rows reported per chunk
_PLACEHOLDER = "0" * uniqkey.LEN
_UNIQ_MARK = properties.UNIQ_KEY + properties.NAME_VALUE_SEPARATOR

Assign = Callable[[list[str], np.ndarray, np.ndarray], np.ndarray]  # (topics, topic_idx, queue) -> queue ids


@dataclass(frozen=True)
class LoadOptions:
    cfg: StoreConfig
    store_timestamp: int
    queues: int = 4  # a producer's default queue count for a new topic
    queue_by: str | None = None  # a column whose Java hash picks the queue of a row that names none
    store_host: SocketAddress | None = None  # of rows that name none (None: DEFAULT_STORE_HOST)

    def __post_init__(self) -> None:
        if not JAVA_LONG_MIN <= self.store_timestamp <= JAVA_LONG_MAX:  # the record's field is a Java long
            raise RmqError(f"--store-timestamp {self.store_timestamp} is out of range (a signed 64-bit "
                           f"millisecond count: {JAVA_LONG_MIN}..{JAVA_LONG_MAX})")


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
    """Column `name` (a dictionary-encoded one decoded), or None when the batch has none."""
    if name not in batch.schema.names:
        return None
    col = batch.column(name)
    return col.dictionary_decode() if pa.types.is_dictionary(col.type) else col


def _given(col) -> np.ndarray:
    return pc.is_valid(col).to_numpy(zero_copy_only=False)


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _ints(batch, name: str, errors: RowErrors, default) -> np.ndarray:
    """Column `name` as int64, `default` where not given. A value that is not an integer, or that the
    field's width on disk does not hold, is flagged (compared in the column's own type: a uint64 too)."""
    col = _column(batch, name)
    n = batch.num_rows
    if col is None or pa.types.is_null(col.type):
        return np.full(n, default, dtype=np.int64)
    given = _given(col)
    if not pa.types.is_integer(col.type):
        errors.flag(given, name, INT_MUST)
        return np.full(n, default, dtype=np.int64)
    values = pc.fill_null(col, 0).to_numpy(zero_copy_only=False)
    errors.flag(given & out_of_range(name, values), name, range_reason(name))
    out = values.astype(np.int64)
    out[~given] = default
    return out


def _text(batch, name: str, errors: RowErrors) -> pa.Array | None:
    """Column `name` as text (None when absent): a value that is not a string, or not UTF-8, is
    flagged and read as not given."""
    col = _column(batch, name)
    if col is None:
        return None
    if pa.types.is_null(col.type):
        return pa.nulls(len(col), pa.string())
    if not _is_text(col.type):
        errors.flag(_given(col), name, TEXT_MUST)
        return pa.nulls(len(col), pa.string())
    return _utf8(col, errors, name)


def _utf8(col, errors: RowErrors, field: str):
    """`col` (text) with the values that are not UTF-8 flagged and made null (ASCII is passed at once)."""
    buf, off = string_buffers(col)
    used = buf[off[0] : off[-1]]
    if used.size == 0 or used.max() < 0x80:
        return col
    bad = ~utf8_valid(buf, off)
    if not bad.any():
        return col
    errors.flag(bad, field, NOT_UTF8)
    return pc.if_else(pa.array(bad), pa.scalar(None, col.type), col)


def _hosts(batch, name: str, default, errors: RowErrors):
    """(address rows (n, 16), port, is IPv6) of a host column; a missing host is `default`."""
    col = _text(batch, name, errors)
    n = batch.num_rows
    if col is None:
        texts, idx = [None], np.zeros(n, dtype=np.int64)
    else:
        enc = pc.dictionary_encode(col)
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


def _topics(batch, errors: RowErrors, rule: Callable[[str], Refusal | None] = topic_refusal) -> _Topics | None:
    """The topic of every row (dictionary-encoded), each distinct name checked once by `rule` (the store's;
    producer rows: the broker's send rule)."""
    col = _text(batch, "topic", errors)
    if col is None:
        errors.row(0, "topic", "missing (no topic column)")
        return None
    enc = pc.dictionary_encode(col)
    names = enc.dictionary.to_pylist()
    idx = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    errors.flag(idx < 0, "topic", "missing")
    for k, name in enumerate(names):
        bad = rule(name)
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
    props_col = _text(batch, "propertiesString", errors)
    if props_col is None:
        errors.row(0, "propertiesString", "missing (no propertiesString column)")
    else:
        errors.flag(~_given(props_col), "propertiesString", "missing")
    ints = {name: _ints(batch, name, errors, 0) for name in ("queueId", "flag", "sysFlag", "reconsumeTimes",
                                                            "bornTimestamp", "storeTimestamp",
                                                            "preparedTransactionOffset")}
    hosts = (_hosts(batch, "bornHost", DEFAULT_STORE_HOST, errors), _hosts(batch, "storeHost", DEFAULT_STORE_HOST,
                                                                               errors))
    body = _body_bytes(batch, errors)
    stored_offset = None
    offset_col = _column(batch, "commitLogOffset")
    if offset_col is not None and offset_col.null_count < n:
        errors.flag(~_given(offset_col), "commitLogOffset", "missing")
        stored_offset = _ints(batch, "commitLogOffset", errors, -1)
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


def _body_column(batch, errors: RowErrors):
    """The body column: base64 text (JSONL, CSV) or bytes (Parquet); None when not given or (flagged)
    of another type."""
    col = _column(batch, "body")
    if col is None or pa.types.is_null(col.type):
        return None
    if not (_is_text(col.type) or pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type)):
        errors.flag(_given(col), "body", TEXT_MUST + " (base64)")
        return None
    return col


def _body_bytes(batch, errors: RowErrors):
    """(bytes, n + 1 offsets) of the body column, empty where not given; None when a value is not valid base64."""
    col = _body_column(batch, errors)
    if col is None:
        return string_buffers(pa.nulls(batch.num_rows, pa.large_binary()))
    return _base64(col, errors, "body") if _is_text(col.type) else string_buffers(pc.fill_null(col, b""))


# ---- producer rows -----------------------------------------------------------------------------
def _bodies(batch, errors: RowErrors):
    """(bytes, n + 1 offsets): body (binary, or base64 text), else bodyText, else empty."""
    n = batch.num_rows
    body, text = _body_column(batch, errors), _text(batch, "bodyText", errors)
    parts = pa.nulls(n, pa.large_binary())
    if text is not None:
        parts = pc.cast(text, pa.large_binary())
    if body is not None:
        if _is_text(body.type):
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
    if col is None or pa.types.is_null(col.type):
        return pa.nulls(n, pa.string())
    if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
        joined = pc.binary_join(_word_lists(col, errors), properties.KEY_SEPARATOR)
    elif not _is_text(col.type):
        errors.flag(_given(col), "keys", KEYS_MUST)
        return pa.nulls(n, pa.string())
    else:
        joined = _text_words(_utf8(col, errors, "keys"), errors)
    return pc.if_else(pc.equal(joined, ""), pa.scalar(None, pa.string()), joined)


def _text_words(col, errors: RowErrors):
    """Keys given as text, words joined by one space: space-separated words, or a JSON list kept as
    text (by the line reader, or Spark's string column)."""
    if _single_words(col):
        return col  # one word each: nothing to split or join
    listed = pc.starts_with(pc.utf8_ltrim_whitespace(pc.fill_null(col, "")), "[")
    joined = pc.binary_join(pc.utf8_split_whitespace(col), properties.KEY_SEPARATOR)
    if not pc.any(listed).as_py():
        return joined
    values = joined.to_pylist()
    for row in np.flatnonzero(listed.to_numpy(zero_copy_only=False)).tolist():
        words = _json_text(col[row].as_py())
        if not isinstance(words, list) or not all(isinstance(w, str) and is_utf8(w) for w in words):
            errors.row(row, "keys", KEYS_MUST)
            words = []
        values[row] = properties.KEY_SEPARATOR.join(words)
    return pa.array(values, pa.string())


def _word_lists(col, errors: RowErrors):
    """A keys column of lists, its rows with an item that is not a UTF-8 string flagged and emptied."""
    flat = pc.list_flatten(col)
    bad = np.zeros(len(col), dtype=bool)
    if _is_text(flat.type):
        parents = pc.list_parent_indices(col).to_numpy(zero_copy_only=False)
        bad[parents[~_given(flat) | ~utf8_valid(*string_buffers(flat))]] = True
    else:  # numbers, objects, ... (a list of nulls too: no row has a word): any row with an item is bad
        bad = pc.fill_null(pc.greater(pc.list_value_length(col), 0), False).to_numpy(zero_copy_only=False)
    errors.flag(bad, "keys", KEYS_MUST)
    if not _is_text(flat.type):
        return pa.nulls(len(col), pa.list_(pa.string()))
    return pc.if_else(pa.array(bad), pa.scalar(None, col.type), col) if bad.any() else col


_NOT_JSON = object()


def _json_text(text: str):
    """The value of JSON text in a text column (keys or properties from CSV or Spark), or _NOT_JSON
    (too deep a nesting included)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


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
    """Each row's own properties (an object: struct from JSON, map from Parquet, JSON text from CSV or
    Spark), None where it has none; None when no row has any. In a struct a null is a field other rows
    have (JSONL's explicit nulls are refused as the block is read); in a map or JSON text it is refused."""
    col = _column(batch, "properties")
    n = batch.num_rows
    if col is None or col.null_count == n:
        return None
    kind = col.type
    if not (pa.types.is_struct(kind) or pa.types.is_map(kind) or _is_text(kind)):
        errors.flag(_given(col), "properties", PROPERTIES_MUST)
        return None
    out: list[dict[str, str] | None] = []
    for row, v in enumerate(_py_values(col, errors, "properties")):
        if isinstance(v, str):
            v = _json_text(v) if v.strip() else None
            if v is _NOT_JSON or not isinstance(v, dict | None):
                errors.row(row, "properties", PROPERTIES_MUST)
                v = None
        elif pa.types.is_map(kind) and v is not None:
            v = dict(v)  # a map comes as (name, value) pairs
        elif v is not None:
            v = {k: x for k, x in v.items() if x is not None}
        if v is not None:
            why = _property_misfit(v)
            if why is not None:
                errors.row(row, "properties", why)
                v = None
        out.append(v or None)
    return out


def _property_misfit(pairs: dict) -> str | None:
    if any(x is None for x in pairs.values()):
        return NULL_PROPERTY
    if not all(isinstance(x, str) for x in pairs.values()):
        return PROPERTIES_MUST
    if not all(is_utf8(k) and is_utf8(x) for k, x in pairs.items()):
        return NOT_UTF8
    return None


def _py_values(col, errors: RowErrors, field: str) -> list:
    """The column's values as Python objects; a value holding text that is not UTF-8 is flagged and None."""
    try:
        return col.to_pylist()
    except UnicodeDecodeError:
        out = []
        for row in range(len(col)):
            try:
                out.append(col[row].as_py())
            except UnicodeDecodeError:
                errors.row(row, field, NOT_UTF8)
                out.append(None)
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
    topics = _topics(batch, errors, sent_topic_refusal)
    if topics is None:
        return errors.found
    delay = _ints(batch, "delayLevel", errors, 0)
    queue_id = _ints(batch, "queueId", errors, NO_QUEUE)
    ints = {"flag": _ints(batch, "flag", errors, 0), "reconsumeTimes": _ints(batch, "reconsumeTimes", errors, 0),
            "bornTimestamp": _ints(batch, "bornTimestamp", errors, opts.store_timestamp),
            "storeTimestamp": np.full(n, opts.store_timestamp, dtype=np.int64)}
    store_host = opts.store_host or DEFAULT_STORE_HOST
    hosts = (_hosts(batch, "bornHost", DEFAULT_BORN_HOST, errors), _hosts(batch, "storeHost", store_host, errors))
    body = _bodies(batch, errors)
    tags_col = _text(batch, "tags", errors)
    tags = pa.nulls(n, pa.string()) if tags_col is None else tags_col
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
    if _is_text(col.type):
        col = _utf8(col, errors, opts.queue_by)
    elif pa.types.is_integer(col.type) or pa.types.is_null(col.type):
        col = pc.cast(col, pa.string())
    else:
        errors.flag(_given(col), opts.queue_by, "the --queue-by column must hold text or integers")
        return queue_id
    enc = pc.dictionary_encode(col)
    hashes = np.array([abs(java_string_hash(v)) % opts.queues for v in enc.dictionary.to_pylist()] + [-1],
                      dtype=np.int64)
    idx = pc.fill_null(enc.indices, len(hashes) - 1).to_numpy(zero_copy_only=False).astype(np.int64)
    picked = hashes[idx]
    return np.where((queue_id == NO_QUEUE) & (picked >= 0), picked, queue_id)
