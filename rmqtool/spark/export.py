"""`spark-export`: every commitlog segment decoded by its own task, written as a dataset.

A segment is self-contained given its start offset (its file name), so tasks need nothing
but the store's settings. Partition k holds segment k, so the dataset's part files are in
log order; rows are those of `rmqtool export`, in the decode schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.store.config import StoreConfig

FORMATS = ("parquet", "jsonl")
_BATCH_ROWS = 1 << 16


@dataclass
class ExportResult:
    segments: int
    messages: int
    out: str

    def to_json(self) -> dict:
        return {"segments": self.segments, "messages": self.messages, "out": self.out}


def export_segment(root: str, cfg: StoreConfig, start: int) -> Iterator:
    """Arrow batches of the export rows of the segment starting at `start`."""
    import pyarrow as pa

    from rmqtool.store.reader import StoreReader
    from rmqtool.store.transfer import export_rows, export_schema

    schema = export_schema()
    reader = StoreReader(root, cfg)
    reader.segments = [s for s in reader.segments if s.start == start]
    rows: list[dict] = []
    for row in export_rows(reader, start):
        row["properties"] = list(row["properties"].items())
        rows.append(row)
        if len(rows) >= _BATCH_ROWS:
            yield pa.RecordBatch.from_pylist(rows, schema=schema)
            rows = []
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=schema)


def _segments_task(batches: Iterator, root: str, cfg: StoreConfig, counter) -> Iterator:
    for batch in batches:
        for start in batch.column("start").to_pylist():
            for out in export_segment(root, cfg, start):
                counter.add(out.num_rows)
                yield out


def spark_export(store: Path, out: Path, cfg: StoreConfig, *, fmt: str = "parquet", master: str = "local[*]") \
        -> ExportResult:
    from rmqtool.spark.session import get_session, job_errors
    from rmqtool.store.reader import StoreReader
    from rmqtool.store.transfer import export_schema

    if fmt not in FORMATS:
        raise RmqError(f"unknown export format {fmt!r}: use {' or '.join(FORMATS)}")
    if out.exists():
        raise RmqError(f"{out} exists: spark-export writes a new folder")
    reader = StoreReader(store, cfg)
    if reader.single_file:
        raise RmqError(f"{store}: spark-export reads a store root, not one segment")
    starts = [s.start for s in reader.segments]
    spark = get_session(master)
    sc = spark.sparkContext
    counter = sc.accumulator(0)
    root = str(Path(store).resolve())
    rdd = sc.parallelize([(s,) for s in starts], max(len(starts), 1))
    segs = spark.createDataFrame(rdd, "start long")
    from pyspark.sql.pandas.types import from_arrow_schema

    df = segs.mapInArrow(lambda it: _segments_task(it, root, cfg, counter), from_arrow_schema(export_schema()))
    writer = df.write.mode("errorifexists")
    with job_errors("spark-export"):
        if fmt == "parquet":
            writer.parquet(str(out))
        else:
            writer.option("ignoreNullFields", "false").json(str(out))
    return ExportResult(len(starts), counter.value, str(out))
