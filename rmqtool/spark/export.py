"""`spark-export`: the logs of one or more stores cut into byte ranges on record boundaries, each range
read by its own task.

The driver walks record headers to cut every segment of every store into ranges of about the same
size (at least one per core in all, over all stores), each starting where a record starts. A task
reads its range through the one read path (`ops.log_rows`), adds the store's `brokerName`
(`spark.brokers`) and hands the row batches to Spark with `mapInArrow`. Partition k holds range k
(stores in the order given, each in log order), so each broker's part files are in log order; rows
are those of `rmqtool export` plus `brokerName`. One store: the part files and the geometry
(`io.geometry.DATASET_FILE`) are in the folder itself, as before; several: each broker's are in
`brokerName=NAME/` (a Hive partition: Spark reads the column back from the folder name). `import` of
a part file into a new store takes the geometry beside it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.files.segments import SegmentFile, data_end, open_read_only
from rmqtool.files.signals import uninterrupted
from rmqtool.io import geometry
from rmqtool.io.atomic import atomic_output
from rmqtool.io.schema import MESSAGE_SCHEMA
from rmqtool.spark.brokers import ExportStore

FORMATS = ("parquet", "jsonl")
STAGES = ["start Spark", "split", "export"]
RANGES_PER_CORE = 2  # a little slack for ranges that end up uneven
BROKER_COLUMN = "brokerName"
# Spark's Arrow conversion takes the 32-bit offset types
SPARK_SCHEMA = pa.schema([pa.field(f.name, {pa.large_binary(): pa.binary(), pa.large_string(): pa.string()}
                                   .get(f.type, f.type)) for f in MESSAGE_SCHEMA]
                         + [pa.field(BROKER_COLUMN, pa.string())])


@dataclass
class ExportResult:
    ranges: int
    messages: int
    out: str

    def to_json(self) -> dict:
        return {"ranges": self.ranges, "messages": self.messages, "out": self.out}


def log_bytes(reader: StoreReader) -> int:
    """Bytes of the log's data (a preallocated segment's unwritten tail is not read)."""
    return sum(data_end(s.path) or s.size for s in reader.segments if s.size)


def record_ranges(reader: StoreReader, target: int) -> list[tuple[int, int]]:
    """(start, end) physical offsets covering the log in ranges of about `target` bytes, each starting at a record
    (and one at each segment's start)."""
    segments = [s for s in reader.segments if s.size]
    if not segments:
        return []
    extent = {s.start: (data_end(s.path) or s.size) for s in segments}
    target = max(target, 1)
    cuts: list[int] = []
    for seg in segments:
        cuts.append(seg.start)
        wanted = np.arange(seg.start + target, seg.start + extent[seg.start], target)
        cuts.extend(_record_starts_at_or_after(seg, wanted))
    end = segments[-1].start + segments[-1].size
    cuts = sorted(set(cuts))
    return list(zip(cuts, [*cuts[1:], end], strict=True))


def _record_starts_at_or_after(seg: SegmentFile, wanted: np.ndarray) -> list[int]:
    """For each offset in `wanted`, the first record start at or after it (the header walk of the scanner)."""
    from rmqtool.structures.commitlog.scan import SegmentEnd, SegmentScanner

    found: list[int] = []
    if not len(wanted):
        return found
    k = 0
    with open_read_only(seg.path) as buf:
        scanner = SegmentScanner(buf, seg.start, str(seg.path), verify_crc=False, data_end=data_end(seg.path))
        for item in scanner.batches():
            if isinstance(item, SegmentEnd) or not len(item):
                continue
            offsets = item.offsets
            while k < len(wanted) and wanted[k] <= offsets[-1]:
                found.append(int(offsets[np.searchsorted(offsets, wanted[k])]))
                k += 1
            if k == len(wanted):
                break
        del scanner
    return found


def export_range(root: str, cfg: StoreConfig, broker: str, start: int, end: int) -> Iterator[pa.RecordBatch]:
    """Row batches of the records starting in [start, end), with their `brokerName` (findings are `verify`'s and
    `export`'s to report)."""
    from rmqtool.ops.log_rows import log_rows

    reader = StoreReader(root, cfg)
    for item in log_rows(reader, from_offset=start, until=end, workers=1):  # Spark runs a task per core
        if isinstance(item, pa.RecordBatch):
            named = pa.RecordBatch.from_arrays([*item.columns, pa.array([broker] * item.num_rows, pa.string())],
                                               schema=item.schema.append(pa.field(BROKER_COLUMN, pa.string())))
            yield named.cast(SPARK_SCHEMA)


def _ranges_task(batches: Iterator, stores: list[tuple[str, StoreConfig, str]], counter) -> Iterator:
    for batch in batches:
        for k, start, end in zip(*(batch.column(c).to_pylist() for c in ("store", "start", "end")), strict=True):
            for out in export_range(*stores[k], start, end):
                counter.add(out.num_rows)
                yield out


def _opened(stores: list[ExportStore]) -> list[StoreReader]:
    """A reader of each store, every one checked before anything is written (a bad one is named)."""
    readers = []
    for store in stores:
        reader = StoreReader(store.root, store.cfg)
        if reader.single_file:
            raise RmqError(f"{store.root}: spark-export reads a store root, not one segment")
        if reader.dledger:
            raise RmqError(f"{store.root}: spark-export splits plain commitlogs; for a DLedger log use "
                           "`rmqtool export`")
        readers.append(reader)
    return readers


def spark_export(stores: list[ExportStore], out: Path, *, fmt: str = "parquet", master: str = "local[*]",
                 verbose: bool = False, progress: Callable[[str, int | None], None] | None = None) -> ExportResult:
    """Write the stores' messages to the new folder `out`, which appears whole or not at all (`io.atomic`);
    `progress(stage, rows)` hears of each of STAGES done."""
    from rmqtool.spark.session import get_session, job_errors

    def note(stage: str, rows: int | None) -> None:
        if progress:
            progress(stage, rows)

    if fmt not in FORMATS:
        raise RmqError(f"unknown export format {fmt!r}: use {' or '.join(FORMATS)}")
    if not stores:
        raise RmqError("spark-export needs a store")
    readers = _opened(stores)
    with atomic_output(out, what="spark-export", exists_hint="spark-export writes a new folder") as tmp:
        spark = get_session(master, verbose)
        note("start Spark", None)
        sc = spark.sparkContext
        target = sum(log_bytes(r) for r in readers) // max(sc.defaultParallelism * RANGES_PER_CORE, 1)
        ranges = [(k, *r) for k, reader in enumerate(readers) for r in record_ranges(reader, target)]
        note("split", None)
        counter = sc.accumulator(0)
        sent = [(str(Path(s.root).resolve()), s.cfg, s.broker) for s in stores]
        rdd = sc.parallelize(ranges, max(len(ranges), 1))
        todo = spark.createDataFrame(rdd, "store int, start long, end long")
        from pyspark.sql.pandas.types import from_arrow_schema

        df = todo.mapInArrow(lambda it: _ranges_task(it, sent, counter), from_arrow_schema(SPARK_SCHEMA))
        writer = df.write.mode("errorifexists")
        if len(stores) > 1:
            writer = writer.partitionBy(BROKER_COLUMN)
        try:
            with job_errors("spark-export"):
                if fmt == "parquet":
                    writer.parquet(str(tmp))
                else:
                    writer.option("ignoreNullFields", "false").json(str(tmp))
        except BaseException:  # no task may write into the folder once it is removed
            with uninterrupted():
                for stop in (sc.cancelAllJobs, spark.stop):
                    with contextlib.suppress(Exception):  # a py4j call the interrupt cut may fail
                        stop()
            raise
        for store, reader in zip(stores, readers, strict=True):
            folder = tmp / partition(store.broker) if len(stores) > 1 else tmp
            folder.mkdir(exist_ok=True)  # a store without messages has no part file
            (folder / geometry.DATASET_FILE).write_bytes(geometry.encode(geometry.of_store(reader.config, None)))
    note("export", counter.value)
    return ExportResult(len(ranges), counter.value, str(out))


def partition(broker: str) -> str:
    """The folder of a broker's part files in a dataset of several stores."""
    return f"{BROKER_COLUMN}={broker}"
