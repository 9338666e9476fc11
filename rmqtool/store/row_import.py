"""Sequential loading of producer rows (`import` of a file that is not an export).

Rows are read in batches (Parquet, or JSONL through Arrow's JSON reader, line by line when
Arrow cannot type a column), turned into records by `load_rows`, given their queues and
unique keys by the same planner the Spark load uses, and appended through
`CommitLog.put_columns`. The file is checked completely before the first write.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

from rmqtool.errors import RmqError
from rmqtool.format import uniqkey
from rmqtool.store.bulk_import import is_parquet
from rmqtool.store.load_rows import LOAD_FIELDS, LoadOptions, RowError, to_chunk
from rmqtool.store.message_store import MessageStore
from rmqtool.store.planner import assign_queues

BATCH_ROWS = 1 << 16
_TYPED = {"topic": pa.string(), "queueId": pa.int64(), "body": pa.string(), "bodyText": pa.string(),
          "tags": pa.string(), "bornTimestamp": pa.int64(), "bornHost": pa.string(), "storeHost": pa.string(),
          "flag": pa.int64(), "delayLevel": pa.int64()}


_STORED = ("propertiesString", "storeTimestamp")  # fields only a stored record has


def is_export(source: Path) -> bool:
    """An export (records as stored: propertiesString or storeTimestamp) rather than producer rows."""
    if is_parquet(source):
        import pyarrow.parquet as pq

        return any(n in pq.ParquetFile(source).schema_arrow.names for n in _STORED)
    with open(source, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.strip():
                try:
                    obj = json.loads(line)
                except ValueError:
                    return True  # the export path names the malformed line
                return isinstance(obj, dict) and any(n in obj for n in _STORED)
    return True


def row_batches(source: Path) -> Iterator[pa.RecordBatch]:
    """The file's rows in order, in batches of at most BATCH_ROWS."""
    if is_parquet(source):
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(source)
        present = [n for n in LOAD_FIELDS if n in pf.schema_arrow.names]
        yield from pf.iter_batches(BATCH_ROWS, columns=present)
        return
    import pyarrow.json as pj

    try:
        table = pj.read_json(source, parse_options=pj.ParseOptions(
            explicit_schema=pa.schema(list(_TYPED.items())), unexpected_field_behavior="infer"))
    except pa.ArrowInvalid:
        table = _python_rows(source)
    yield from table.to_batches(BATCH_ROWS)


def _python_rows(source: Path) -> pa.Table:
    """Rows Arrow cannot type (keys both text and lists, say): read line by line, lists and
    objects kept as JSON text for `load_rows` to read."""
    columns: dict[str, list] = {n: [] for n in LOAD_FIELDS}
    with open(source, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                raise RmqError(f"{source}:{n}: malformed JSON ({e})") from None
            if not isinstance(obj, dict):
                raise RmqError(f"{source}:{n}: a row must be a JSON object")
            for name, values in columns.items():
                v = obj.get(name)
                values.append(json.dumps(v) if isinstance(v, list | dict) else None if v is None else
                              v if name in ("queueId", "bornTimestamp", "flag", "delayLevel") else str(v))
    return pa.table({n: pa.array(v, _TYPED.get(n, pa.string())) for n, v in columns.items()})


def describe(source, row: int, error: RowError) -> str:
    return f"{source}: row {row + 1}: {error.field}: {error.reason}"


def check_rows(source: Path, opts: LoadOptions) -> int:
    """Every row turned into its record; the first bad one is an RmqError naming row and field."""
    count = 0
    for batch in row_batches(source):
        chunk = to_chunk(batch, opts)
        if isinstance(chunk, list):
            first = chunk[0]
            raise RmqError(describe(source, count + first.row, first))
        count += len(chunk)
    return count


def write_rows(store: MessageStore, source: Path, opts: LoadOptions,
               progress: Callable[[int], None] | None = None) -> tuple[int, int]:
    """Append every row of a checked file; returns (messages, bytes taken)."""
    stamp = uniqkey.load_stamp(opts.store_timestamp)
    next_pick: dict[int, int] = {}
    topic_ids: dict[str, int] = {}
    count = taken = 0
    for batch in row_batches(source):
        chunk = to_chunk(batch, opts)
        if isinstance(chunk, list):
            raise RmqError(describe(source, count + chunk[0].row, chunk[0]))
        gids = np.array([topic_ids.setdefault(str(t), len(topic_ids)) for t in chunk.topics], dtype=np.int64)
        queue_id = assign_queues(gids[chunk.topic_idx], chunk.queue, next_pick, opts.queues)
        chunk.finish(queue_id, count, stamp)
        combined = (chunk.topic_idx << 32) | (queue_id & 0xFFFFFFFF)
        distinct, key_ids = np.unique(combined, return_inverse=True)
        keys = [(str(chunk.topics[int(c) >> 32]), int(c & 0xFFFFFFFF)) for c in distinct.tolist()]
        taken += store.put_columns(chunk.cols, keys, key_ids.ravel().astype(np.int64))
        count += len(chunk)
        if progress:
            progress(len(chunk))
    return count, taken
