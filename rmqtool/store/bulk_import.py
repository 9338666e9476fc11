"""Import through columns: an export read by pyarrow (Parquet, or JSONL through Arrow's JSON
reader), turned into `RecordColumns` chunk by chunk, checked in bulk and written by one
compiled pass per segment (`CommitLog.put_columns`).

This is the fast path of `import`. Whatever it cannot take as it is (no pyarrow, a field
Arrow cannot read as the schema says, a missing propertiesString, any record a rule
refuses) raises `Unsupported`, and `import` goes line by line instead, which names the
exact line and reason. Both paths write the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from rmqtool.format import message, properties, sysflag
from rmqtool.format.columns import RecordColumns, b64decode_column
from rmqtool.store.commitlog import ENCODER_HEADROOM
from rmqtool.store.config import StoreConfig
from rmqtool.store.message_store import MessageStore, check_topic
from rmqtool.store.producer import DEFAULT_STORE_HOST

CHUNK_ROWS = 1 << 14  # bounds memory: a chunk of 1 KiB messages is ~50 MB in flight
_INT32 = ("queueId", "flag", "sysFlag", "reconsumeTimes")
_INT64 = ("bornTimestamp", "storeTimestamp", "preparedTransactionOffset")
_STRINGS = ("topic", "body", "propertiesString", "bornHost", "storeHost")
_PARQUET_MAGIC = b"PAR1"


class Unsupported(Exception):
    """The columnar path cannot take this input; import it line by line."""


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        raise Unsupported("pyarrow is not installed") from None
    return pa, pc


def is_parquet(source: Path) -> bool:
    with open(source, "rb") as f:
        return f.read(4) == _PARQUET_MAGIC


def batches(source: str | Path) -> Iterator:
    """Record batches of the fields import needs."""
    pa, _ = _pyarrow()
    source = Path(source)
    names = _INT32 + _INT64 + _STRINGS
    try:
        if is_parquet(source):
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(source)
            present = [n for n in names if n in pf.schema_arrow.names]
            yield from pf.iter_batches(CHUNK_ROWS, columns=present)
            return
        import pyarrow.json as pj

        schema = pa.schema([(n, pa.int64()) for n in _INT32 + _INT64] + [(n, pa.large_string()) for n in _STRINGS])
        reader = pj.open_json(source, read_options=pj.ReadOptions(block_size=16 << 20),
                              parse_options=pj.ParseOptions(explicit_schema=schema,
                                                            unexpected_field_behavior="ignore"))
        yield from reader
    except (pa.ArrowException, OSError) as e:
        raise Unsupported(str(e)) from None


def _ints(batch, name: str, bounds: tuple[int, int]) -> np.ndarray:
    _, pc = _pyarrow()
    if name not in batch.schema.names:
        return np.zeros(batch.num_rows, dtype=np.int64)
    values = pc.fill_null(batch.column(name), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    if len(values) and (values.min() < bounds[0] or values.max() > bounds[1]):
        raise Unsupported(f"{name} out of range")
    return values


def _hosts(batch, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(address rows (n, 16), port, is IPv6) of a host column; missing hosts get the default."""
    from rmqtool.store.load_rows import RowErrors, read_hosts

    errors = RowErrors()
    hosts = read_hosts(batch, name, DEFAULT_STORE_HOST, errors)
    if errors.found:  # the line-by-line path reports it with its line number
        raise Unsupported(f"bad {name}")
    return hosts


def to_columns(batch, cfg: StoreConfig) -> tuple[RecordColumns, list[tuple[str, int]], np.ndarray]:
    """The records of one batch, checked against the store's rules; (columns, queue keys, key index)."""
    pa, pc = _pyarrow()
    names = batch.schema.names
    if "topic" not in names or "propertiesString" not in names or "body" not in names:
        raise Unsupported("topic, body and propertiesString are needed")
    n = batch.num_rows
    if batch.column("topic").null_count or batch.column("propertiesString").null_count:
        raise Unsupported("a record without topic or propertiesString")
    i32, i64 = (-(2**31), 2**31 - 1), (-(2**63), 2**63 - 1)
    queue_id = _ints(batch, "queueId", i32)
    topics = pc.dictionary_encode(batch.column("topic"))
    topic_names = topics.dictionary.to_pylist()
    topic_idx = topics.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    encoded = [t.encode("utf-8") for t in topic_names]
    for t, b in zip(topic_names, encoded, strict=True):
        if check_topic(t) or len(b) > message.MAX_TOPIC_LEN_V1:
            raise Unsupported(f"topic {t!r}")
    topic_buf = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8)
    topic_lens = np.array([len(b) for b in encoded], dtype=np.int64)
    topic_starts = np.concatenate([[0], np.cumsum(topic_lens)[:-1]]).astype(np.int64)
    from rmqtool.io.buffers import string_buffers as _strings

    body = batch.column("body")
    if pa.types.is_string(body.type) or pa.types.is_large_string(body.type):  # JSONL: base64 text
        b64, b64_off = _strings(pc.fill_null(body, ""))
        body_buf, body_off, bad = b64decode_column(b64, b64_off)
        if bad >= 0:
            raise Unsupported("body is not base64")
    else:  # Parquet: the stored bytes
        body_buf, body_off = _strings(pc.fill_null(body, b""))
    props_buf, props_off = _strings(batch.column("propertiesString"))
    props_start, props_len = props_off[:-1], np.diff(props_off)
    born_addr, born_port, born_v6 = _hosts(batch, "bornHost")
    store_addr, store_port, store_v6 = _hosts(batch, "storeHost")
    sys_flag = _ints(batch, "sysFlag", i32) & ~(sysflag.BORN_HOST_V6 | sysflag.STORE_HOST_V6)
    sys_flag |= np.where(born_v6, sysflag.BORN_HOST_V6, 0) | np.where(store_v6, sysflag.STORE_HOST_V6, 0)
    cols = RecordColumns(
        queue_id=queue_id, flag=_ints(batch, "flag", i32), sys_flag=sys_flag,
        born_timestamp=_ints(batch, "bornTimestamp", i64), born_address=born_addr, born_port=born_port,
        store_timestamp=_ints(batch, "storeTimestamp", i64), store_address=store_addr, store_port=store_port,
        reconsume_times=_ints(batch, "reconsumeTimes", i32),
        prepared_offset=_ints(batch, "preparedTransactionOffset", i64),
        body_buf=body_buf, body_start=body_off[:-1], body_len=np.diff(body_off),
        topic_buf=topic_buf, topic_start=topic_starts[topic_idx], topic_len=topic_lens[topic_idx],
        props_buf=props_buf, props_start=props_start, props_len=props_len,
    )
    lengths = cols.lengths()
    if n and (cols.body_len.max() > cfg.maxMessageSize or props_len.max() > properties.MAX_PROPERTIES_LEN
              or lengths.max() > cfg.maxMessageSize + ENCODER_HEADROOM
              or lengths.max() + message.BLANK_MARKER_LEN > cfg.mappedFileSizeCommitLog):
        raise Unsupported("a record the store refuses")
    combined = (topic_idx << 32) | (queue_id & 0xFFFFFFFF)
    _, first, key_ids = np.unique(combined, return_index=True, return_inverse=True)
    keys = [(topic_names[int(topic_idx[i])], int(queue_id[i])) for i in first.tolist()]
    return cols, keys, key_ids.ravel().astype(np.int64)


def check(source: str | Path, cfg: StoreConfig) -> int:
    """Read and check every record; returns the count. Raises Unsupported when it cannot."""
    return sum(len(to_columns(b, cfg)[0]) for b in batches(source))


def write(store: MessageStore, source: str | Path, progress=None) -> tuple[int, int]:
    """Write every record of a checked source; returns (messages, bytes taken)."""
    count = taken = 0
    for b in batches(source):
        cols, keys, key_ids = to_columns(b, store.cfg)
        taken += store.put_columns(cols, keys, key_ids)
        count += len(cols)
        if progress:
            progress(len(cols))
    return count, taken
