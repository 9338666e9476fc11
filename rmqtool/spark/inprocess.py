"""A small spark-load without Spark: below a row threshold the rows go through the one load path
`import` takes (`load.writer`), in this process, with spark-load's settings.

Starting Spark costs seconds (a JVM, a Python worker per core, Spark SQL's read) where loading a
hundred thousand rows in process takes about one. The files and topic table come out as the Spark
path writes them: the same records and planner, the store's broker address, delayed rows refused,
new index files named by the load's store timestamp (into a store with an index, the last index
file is filled first, as `import` fills it, where the Spark path starts a new one). The load is
recorded under its id like an adopted one, so either path recognises it. Unlike the Spark path it
is not staged: a refused row leaves the store as it was, but a killed process leaves what
`import` leaves (`abort`; `recover` keeps what was written).
"""

from __future__ import annotations

import pyarrow as pa

from rmqtool.engine.message_store import claim
from rmqtool.engine.opening import Store
from rmqtool.engine.staging import adopted, discard_stale, record_load, tidy
from rmqtool.errors import RmqError
from rmqtool.io.sources import SourceFiles
from rmqtool.load.records import LoadOptions
from rmqtool.load.writer import load

_BLOCK = 1 << 20


def count_rows(files: list[str], fmt: str, limit: int) -> int:
    """Rows of the input, counted until `limit` is reached (the count then stops): Parquet from
    its footers, JSONL and CSV by their lines (blank lines and quoted line breaks count too)."""
    total = 0
    for f in files:
        if total >= limit:
            break
        if fmt == "parquet":
            total += _parquet_rows(f)
        else:
            header = int(fmt == "csv")
            total += max(_lines(f, limit - total + header) - header, 0)
    return total


def _parquet_rows(path: str) -> int:
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path).metadata.num_rows
    except (pa.ArrowException, OSError) as e:
        raise RmqError(f"{path}: not a readable Parquet file ({e})") from None


def _lines(path: str, limit: int) -> int:
    """Lines of a text file (a last line without its newline too), counting stops past `limit`."""
    lines, last = 0, b"\n"
    try:
        with open(path, "rb") as f:
            while lines <= limit and (block := f.read(_BLOCK)):
                lines += block.count(b"\n")
                last = block[-1:]
    except OSError as e:
        raise RmqError(f"cannot read {path}: {e.strerror}") from None
    return lines + (last != b"\n")


def already_loaded(store: Store, load_id: str) -> dict | None:
    """Under the store's lock: finish a half-adopted Spark load, drop staging a killed one left,
    and return the record of `load_id` when it was loaded before."""
    paths = store.paths
    if not paths.is_store():
        return None
    lock = claim(store, create=False)
    try:
        discard_stale(paths)
        tidy(paths)
        return adopted(paths, load_id)
    finally:
        lock.release()


def load_in_process(files: list[str], fmt: str, store: Store, opts: LoadOptions, load_id: str,
                    register_topics: bool) -> tuple[int, int, int]:
    """Load the rows through `load.writer` and record the load; returns (messages, first offset, end)."""
    paths = store.paths
    source = SourceFiles(files, fmt, producer_rows=True)
    summary = load(store, source, opts, register_topics=register_topics, delayed=False,
                   clock=lambda: opts.store_timestamp, command="spark-load")
    first = summary.first_offset or 0
    end = summary.end_offset if summary.end_offset is not None else first
    record_load(paths, load_id, {"storeTimestamp": opts.store_timestamp, "messages": summary.messages,
                                 "base": {"commitlogEnd": first}, "end": end, "inputs": files,
                                 "loadId": load_id, "inProcess": True})
    return summary.messages, first, end


def is_small(files: list[str], fmt: str, threshold: int) -> bool:
    """Whether the input has fewer rows than `threshold` (0: never)."""
    return threshold > 0 and count_rows(files, fmt, threshold) < threshold
