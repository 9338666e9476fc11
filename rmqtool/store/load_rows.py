"""Producer rows (the names of `append --batch` lines) turned into record columns, in bulk.

A row carries topic, optional queueId, body (bytes, or base64 text) or bodyText, tags, keys,
properties, bornTimestamp, bornHost, storeHost and flag. Each becomes the record a producer
would send and the store would write: properties built from tags, keys and the user's
pairs in Java HashMap order, a UNIQ_KEY unless the row brings one, the load's one store
timestamp. Two things are only known once the whole load is planned: the queue of a row
that names none, and the row's number in the load, which its UNIQ_KEY is made of. The
chunk leaves room for both and `LoadChunk.finish` fills them in.

Sequential `import` of producer rows and every Spark task build their records here, so
the two write the same bytes. A bad row is reported as data (row, field, reason), never as
an exception halfway through.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqtool.errors import RmqError
from rmqtool.format import message, properties, sysflag, uniqkey
from rmqtool.format.columns import RecordColumns, b64decode_column
from rmqtool.format.hosts import IPV4_LEN, IPV6_LEN, parse_host
from rmqtool.format.javahash import java_string_hash
from rmqtool.io.buffers import string_buffers
from rmqtool.store.commitlog import ENCODER_HEADROOM
from rmqtool.store.config import StoreConfig
from rmqtool.store.message_store import check_topic
from rmqtool.store.planner import NO_QUEUE
from rmqtool.store.producer import DEFAULT_BORN_HOST, DEFAULT_STORE_HOST
from rmqtool.store.scratch import load_arrays, save_arrays

LOAD_FIELDS = ("topic", "queueId", "body", "bodyText", "tags", "keys", "properties", "bornTimestamp", "bornHost",
               "storeHost", "flag", "delayLevel")
MAX_ERRORS = 20  # bad rows reported per chunk
_PLACEHOLDER = "0" * uniqkey.LEN
_SEPARATORS = (properties.NAME_VALUE_SEPARATOR, properties.PROPERTY_SEPARATOR)


@dataclass(frozen=True)
class LoadOptions:
    cfg: StoreConfig
    store_timestamp: int
    queues: int = 4  # a producer's default queue count for a new topic
    queue_by: str | None = None  # a column whose Java hash picks the queue of a row that names none


@dataclass(frozen=True)
class RowError:
    row: int  # in the batch
    field: str
    reason: str


@dataclass
class LoadChunk:
    """Rows of a load as record columns, waiting for their queues and unique keys."""

    cols: RecordColumns
    topics: np.ndarray  # the chunk's topic names (str)
    topic_idx: np.ndarray  # each row's index into `topics`
    queue: np.ndarray  # the row's queue, or NO_QUEUE
    uniq_at: np.ndarray  # where in cols.props_buf the row's UNIQ_KEY digits go, -1 when the row brought one
    born_ip4: np.ndarray  # (n, 4): the address a unique key starts with

    def __len__(self) -> int:
        return len(self.queue)

    def finish(self, queue_id: np.ndarray, row_base: int, stamp: tuple[int, int]) -> None:
        """Set the planned queues and write each row's unique key (rows numbered from `row_base`)."""
        self.cols.queue_id = np.asarray(queue_id, dtype=np.int64)
        rows = np.flatnonzero(self.uniq_at >= 0)
        if len(rows):
            digits = uniqkey.for_load(self.born_ip4[rows], stamp, row_base + rows)
            at = self.uniq_at[rows][:, None] + np.arange(uniqkey.LEN)
            self.cols.props_buf[at] = digits

    def save(self, path) -> None:
        arrays = {f.name: getattr(self.cols, f.name) for f in fields(RecordColumns)}
        save_arrays(path, topics=self.topics, topic_idx=self.topic_idx, queue=self.queue, uniq_at=self.uniq_at,
                    born_ip4=self.born_ip4, **arrays)

    @classmethod
    def load(cls, path) -> LoadChunk:
        z = load_arrays(path)
        cols = RecordColumns(**{f.name: z[f.name] for f in fields(RecordColumns)})
        return cls(cols, z["topics"], z["topic_idx"], z["queue"], z["uniq_at"], z["born_ip4"])


class RowErrors:
    """Bad rows found so far (at most MAX_ERRORS)."""

    def __init__(self) -> None:
        self.found: list[RowError] = []

    def flag(self, mask: np.ndarray, field: str, reason: str) -> None:
        for row in np.flatnonzero(mask)[: MAX_ERRORS - len(self.found)].tolist():
            self.found.append(RowError(row, field, reason))

    def row(self, row: int, field: str, reason: str) -> None:
        if len(self.found) < MAX_ERRORS:
            self.found.append(RowError(row, field, reason))


def _column(batch, name: str):
    return batch.column(name) if name in batch.schema.names else None


def _ints(batch, name: str, errors: RowErrors, low: int, high: int, default) -> np.ndarray:
    col = _column(batch, name)
    n = batch.num_rows
    if col is None:
        return np.full(n, default, dtype=np.int64)
    try:
        values = pc.cast(col, pa.int64())
    except pa.ArrowInvalid:
        values = pc.cast(pa.nulls(n), pa.int64())
        errors.flag(np.ones(n, dtype=bool), name, "not an integer")
    out = pc.fill_null(values, default).to_numpy(zero_copy_only=False).astype(np.int64)
    given = pc.is_valid(values).to_numpy(zero_copy_only=False)
    errors.flag(given & ((out < low) | (out > high)), name, f"out of range [{low}, {high}]")
    return out


def read_hosts(batch, name: str, default, errors: RowErrors):
    """(address rows (n, 16), port, is IPv6) of a host column."""
    col = _column(batch, name)
    n = batch.num_rows
    if col is None:
        texts, idx = [None], np.zeros(n, dtype=np.int64)
    else:
        enc = pc.dictionary_encode(pc.cast(col, pa.string()))
        texts = [*enc.dictionary.to_pylist(), None]
        idx = pc.fill_null(enc.indices, len(texts) - 1).to_numpy(zero_copy_only=False).astype(np.int64)
    addr = np.zeros((len(texts), IPV6_LEN), dtype=np.uint8)
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


def _bodies(batch, errors: RowErrors):
    """(bytes, n + 1 offsets): body (binary, or base64 text), else bodyText, else empty."""
    n = batch.num_rows
    body, text = _column(batch, "body"), _column(batch, "bodyText")
    parts = pa.nulls(n, pa.large_binary())
    if text is not None:
        parts = pc.cast(text, pa.large_binary())
    if body is not None:
        if pa.types.is_string(body.type) or pa.types.is_large_string(body.type):
            b64, b64_off = string_buffers(pc.fill_null(body, ""))
            out, out_off, bad = b64decode_column(b64, b64_off)
            if bad >= 0:
                errors.row(bad, "body", "not valid base64 (use bodyText for plain text)")
                return np.zeros(0, dtype=np.uint8), np.zeros(n + 1, dtype=np.int64)
            decoded = pa.LargeBinaryArray.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(out_off),
                                                                                 pa.py_buffer(out)])
        else:
            decoded = pc.cast(body, pa.large_binary())
        parts = pc.if_else(pc.is_valid(body), decoded, parts)
    return string_buffers(pc.fill_null(parts, b""))


def _words(batch, errors: RowErrors) -> list[str | None] | pa.Array:
    """The KEYS value of each row: its words joined by one space (null: none)."""
    col = _column(batch, "keys")
    n = batch.num_rows
    if col is None:
        return pa.nulls(n, pa.string())
    if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
        joined = pc.binary_join(col, properties.KEY_SEPARATOR)
    else:
        col = pc.cast(col, pa.string())
        listed = pc.starts_with(pc.utf8_ltrim_whitespace(pc.fill_null(col, "")), "[")
        joined = pc.binary_join(pc.utf8_split_whitespace(col), properties.KEY_SEPARATOR)
        if pc.any(listed).as_py():  # a JSON list rendered as text (Spark reads a list into a string column)
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


def _user_properties(batch, errors: RowErrors) -> list[dict[str, str] | None]:
    """Each row's own properties (map, struct, or JSON text), None where it has none."""
    col = _column(batch, "properties")
    n = batch.num_rows
    if col is None or col.null_count == n:
        return [None] * n
    values = col.to_pylist()
    out: list[dict[str, str] | None] = []
    for row, v in enumerate(values):
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


def _has_separator(arr) -> np.ndarray:
    hit = pc.or_(pc.match_substring(arr, _SEPARATORS[0]), pc.match_substring(arr, _SEPARATORS[1]))
    return pc.fill_null(hit, False).to_numpy(zero_copy_only=False)


def _generated_props(tags, keys, rows: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Properties of rows with no user pairs: (strings, offset of the UNIQ_KEY digits in each)."""
    has_tags = pc.is_valid(tags).to_numpy(zero_copy_only=False)[rows]
    has_keys = pc.is_valid(keys).to_numpy(zero_copy_only=False)[rows]
    code = has_tags.astype(np.int64) * 2 + has_keys
    uniq = np.empty(len(rows), dtype=np.int64)
    pieces, order_rows = [], []
    for c in np.unique(code).tolist():
        sel = np.flatnonzero(code == c)
        picked = pa.array(rows[sel])
        names = [properties.TAGS] * (c >> 1) + [properties.KEYS] * (c & 1) + [properties.UNIQ_KEY]
        value = {properties.TAGS: pc.take(tags, picked), properties.KEYS: pc.take(keys, picked)}
        before: list = []
        after: list = []
        target = before
        for k, name in enumerate(properties.java_hashmap_order(names)):
            sep = properties.PROPERTY_SEPARATOR if k else ""
            if name == properties.UNIQ_KEY:
                before.append(f"{sep}{name}{properties.NAME_VALUE_SEPARATOR}")
                target = after
                continue
            target.append(f"{sep}{name}{properties.NAME_VALUE_SEPARATOR}")
            target.append(value[name])
        prefix = _join(before, len(sel))
        full = _join([prefix, _PLACEHOLDER, *after], len(sel))
        uniq[sel] = pc.binary_length(prefix).to_numpy(zero_copy_only=False)
        pieces.append(full)
        order_rows.append(sel)
    joined = pa.concat_arrays([p.cast(pa.large_string()) for p in pieces])
    back = np.empty(len(rows), dtype=np.int64)
    back[np.concatenate(order_rows)] = np.arange(len(rows))
    return pc.take(joined, pa.array(back)), uniq


def _join(parts: list, n: int) -> pa.Array:
    arrays = [p if isinstance(p, pa.Array | pa.ChunkedArray) else pa.array([p] * n, pa.string()) for p in parts]
    if len(arrays) == 1:
        return arrays[0]
    return pc.binary_join_element_wise(*arrays, "")


def _row_props(tags: str | None, keys: str | None, user: dict[str, str]) -> tuple[str, int]:
    """One row's properties the producer's way, and where its UNIQ_KEY digits go (-1: the row brought one)."""
    pairs: dict[str, str] = {}
    if tags:
        pairs[properties.TAGS] = tags
    if keys:
        pairs[properties.KEYS] = keys
    pairs.update(user)
    generated = properties.UNIQ_KEY not in pairs
    if generated:
        pairs[properties.UNIQ_KEY] = _PLACEHOLDER
    text = properties.build((k, pairs[k]) for k in properties.java_hashmap_order(pairs))
    if not generated:
        return text, -1
    marker = f"{properties.UNIQ_KEY}{properties.NAME_VALUE_SEPARATOR}"
    at = text.index(marker) if text.startswith(marker) else text.index(properties.PROPERTY_SEPARATOR + marker) + 1
    return text, len(text[: at + len(marker)].encode("utf-8"))


def to_chunk(batch, opts: LoadOptions) -> LoadChunk | list[RowError]:
    """The rows of one Arrow batch as a chunk, or the first bad rows."""
    if isinstance(batch, pa.Table):
        batch = batch.combine_chunks().to_batches()[0] if batch.num_rows else pa.RecordBatch.from_pylist([])
    n = batch.num_rows
    cfg = opts.cfg
    errors = RowErrors()
    topic_col = _column(batch, "topic")
    if topic_col is None:
        return [RowError(0, "topic", "missing (no topic column)")]
    topics = pc.dictionary_encode(pc.cast(topic_col, pa.string()))
    topic_names = topics.dictionary.to_pylist()
    topic_idx = pc.fill_null(topics.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    errors.flag(topic_idx < 0, "topic", "missing")
    encoded = [t.encode("utf-8") for t in topic_names]
    for k, (t, b) in enumerate(zip(topic_names, encoded, strict=True)):
        refusal = check_topic(t)
        if refusal is not None or len(b) > message.MAX_TOPIC_LEN_V1:
            reason = refusal.reason if refusal is not None else \
                f"{len(b)} bytes; at most {message.MAX_TOPIC_LEN_V1}"
            errors.flag(topic_idx == k, "topic", reason)
    delay = _ints(batch, "delayLevel", errors, 0, 2**31 - 1, 0)
    errors.flag(delay > 0, "delayLevel", "delayed messages are not bulk loaded (use rmqtool append)")
    queue_id = _ints(batch, "queueId", errors, 0, 2**31 - 1, NO_QUEUE)
    flag = _ints(batch, "flag", errors, -(2**31), 2**31 - 1, 0)
    born_ts = _ints(batch, "bornTimestamp", errors, -(2**63), 2**63 - 1, opts.store_timestamp)
    born_addr, born_port, born_v6 = read_hosts(batch, "bornHost", DEFAULT_BORN_HOST, errors)
    store_addr, store_port, store_v6 = read_hosts(batch, "storeHost", DEFAULT_STORE_HOST, errors)
    body_buf, body_off = _bodies(batch, errors)
    tags_col = _column(batch, "tags")
    tags = pa.nulls(n, pa.string()) if tags_col is None else pc.cast(tags_col, pa.string())
    tags = pc.if_else(pc.equal(tags, ""), pa.scalar(None, pa.string()), tags)
    keys = _words(batch, errors)
    errors.flag(_has_separator(tags), "tags", "holds a separator character (\\x01 or \\x02)")
    errors.flag(_has_separator(keys), "keys", "holds a separator character (\\x01 or \\x02)")
    user = _user_properties(batch, errors)
    if opts.queue_by is not None:
        queue_id = _queue_by_hash(batch, opts, queue_id, errors)
    if errors.found:
        return errors.found

    with_user = np.array([u is not None for u in user], dtype=bool)
    props_text = pa.nulls(n, pa.large_string())
    uniq_in_props = np.full(n, -1, dtype=np.int64)
    plain = np.flatnonzero(~with_user)
    pieces, order = [], []
    if len(plain):
        text, at = _generated_props(tags, keys, plain)
        pieces.append(text)
        order.append(plain)
        uniq_in_props[plain] = at
    if with_user.any():
        rows = np.flatnonzero(with_user)
        tag_list, key_list = tags.to_pylist(), keys.to_pylist()
        texts = []
        for row in rows.tolist():
            u = user[row]
            bad = [k for k, v in u.items() if not k or any(s in k or s in v for s in _SEPARATORS)]
            if bad:
                errors.row(row, "properties", f"property {bad[0]!r} holds a separator character or an empty name")
                continue
            if properties.DELAY in u:
                errors.row(row, "properties", "DELAY: delayed messages are not bulk loaded (use rmqtool append)")
                continue
            text, at = _row_props(tag_list[row], key_list[row], u)
            texts.append(text)
            uniq_in_props[row] = at
        if errors.found:
            return errors.found
        pieces.append(pa.array(texts, pa.large_string()))
        order.append(rows)
    if pieces:
        back = np.empty(n, dtype=np.int64)
        back[np.concatenate(order)] = np.arange(n)
        props_text = pc.take(pa.concat_arrays([p.cast(pa.large_string()) for p in pieces]), pa.array(back))
    props_buf, props_off = string_buffers(props_text)
    props_buf = props_buf.copy()  # unique keys are written into it
    props_start, props_len = props_off[:-1].copy(), np.diff(props_off)

    topic_buf = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8)
    topic_lens = np.array([len(b) for b in encoded], dtype=np.int64)
    topic_starts = np.concatenate([[0], np.cumsum(topic_lens)[:-1]]).astype(np.int64)
    sys_flag = np.where(born_v6, sysflag.BORN_HOST_V6, 0) | np.where(store_v6, sysflag.STORE_HOST_V6, 0)
    cols = RecordColumns(
        queue_id=queue_id.copy(), flag=flag, sys_flag=sys_flag.astype(np.int64), born_timestamp=born_ts,
        born_address=born_addr, born_port=born_port, store_timestamp=np.full(n, opts.store_timestamp, dtype=np.int64),
        store_address=store_addr, store_port=store_port, reconsume_times=np.zeros(n, dtype=np.int64),
        prepared_offset=np.zeros(n, dtype=np.int64), body_buf=body_buf, body_start=body_off[:-1].copy(),
        body_len=np.diff(body_off), topic_buf=topic_buf, topic_start=topic_starts[topic_idx],
        topic_len=topic_lens[topic_idx], props_buf=props_buf, props_start=props_start, props_len=props_len)
    lengths = cols.lengths()
    errors.flag(cols.body_len > cfg.maxMessageSize, "body", f"over maxMessageSize ({cfg.maxMessageSize} bytes)")
    errors.flag(props_len > properties.MAX_PROPERTIES_LEN, "properties",
                f"properties string over {properties.MAX_PROPERTIES_LEN} bytes")
    errors.flag((lengths > cfg.maxMessageSize + ENCODER_HEADROOM)
                | (lengths + message.BLANK_MARKER_LEN > cfg.mappedFileSizeCommitLog), "body",
                "the record is too large for the store")
    if errors.found:
        return errors.found
    born_ip4 = np.where(born_v6[:, None], born_addr[:, IPV6_LEN - IPV4_LEN :], born_addr[:, :IPV4_LEN])
    uniq_at = np.where(uniq_in_props >= 0, props_start + uniq_in_props, -1)
    return LoadChunk(cols, np.array(topic_names, dtype=str), topic_idx, queue_id, uniq_at,
                     np.ascontiguousarray(born_ip4))


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
