"""`spark-export`: the logs of one or more stores cut into byte ranges on record boundaries, each range
read and written by its own task.

The driver walks record headers to cut every segment of every store into ranges of about the same
size (at least one per core in all, over all stores), each starting where a record starts. A task
reads its range through the one read path (`ops.log_rows`) and writes it as its own part file,
`part-K` for range K (stores in the order given, each in log order), Parquet through pyarrow or JSONL
through export's line writer: the rows do not pass through the JVM, whose Arrow-to-row conversion and
Parquet writer cost more than the reading (docs/scale.md). Rows are those of `rmqtool export` plus
`brokerName` (`spark.brokers`). One store: the part files and the geometry (`io.geometry.DATASET_FILE`)
are in the folder itself, as before; several: each broker's are in `brokerName=NAME/` (a Hive
partition, as Spark's `partitionBy` writes it: the column is the folder's name, not in the files).
`import` of a part file into a new store takes the geometry beside it.
"""
from __future__ import annotations

import contextlib
import json
import os
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
from rmqtool.io.jsonl import jsonl_bytes
from rmqtool.io.schema import MESSAGE_SCHEMA
from rmqtool.ops.log_rows import log_rows
from rmqtool.spark.brokers import ExportStore
from rmqtool.spark.session import get_session, job_errors
from rmqtool.structures.commitlog.scan import SegmentEnd, SegmentScanner

FORMATS = ("parquet", "jsonl")
STAGES = ["start Spark", "split", "export"]
RANGES_PER_CORE = 2  # a little slack for ranges that end up uneven
BROKER_COLUMN = "brokerName"
SUFFIX = {"parquet": ".parquet", "jsonl": ".jsonl"}
DICTIONARY_COLUMNS = ["topic", "bornHost", "storeHost", "compression", BROKER_COLUMN]  # the others rarely repeat


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


@dataclass(frozen=True)
class RangeTask:
    """One task: a byte range of a store's log and the part file it becomes."""

    root: str
    cfg: StoreConfig
    broker: str
    start: int
    end: int
    part: str  # the part file, a path in the output's temporary folder
    named: bool  # the rows carry brokerName (one store); else it is the folder's name


def export_range(task: RangeTask) -> Iterator[pa.RecordBatch]:
    """Row batches of the records starting in [start, end), in the decode schema (plus `brokerName` when
    `named`); findings are `verify`'s and `export`'s to report."""
    reader = StoreReader(task.root, task.cfg)
    for item in log_rows(reader, from_offset=task.start, until=task.end, workers=1):  # a task per core
        if isinstance(item, pa.RecordBatch):
            if task.named:
                item = item.append_column(BROKER_COLUMN, pa.array([task.broker] * item.num_rows, pa.string()))
            yield item


def write_part(task: RangeTask, fmt: str) -> int:
    """Write the range's rows to its part file (under a temporary name, renamed when whole, so a second attempt
    of the task writes the same file); returns the rows. The folder must exist: a task never creates one, so a
    task still running after its export was given up cannot bring the output back."""
    part = Path(task.part)
    tmp = part.with_name(f".{part.name}.{os.getpid()}")
    rows = 0
    if fmt == "parquet":
        import pyarrow.parquet as pq

        schema = MESSAGE_SCHEMA.append(pa.field(BROKER_COLUMN, pa.string())) if task.named else MESSAGE_SCHEMA
        with pq.ParquetWriter(tmp, schema, use_dictionary=DICTIONARY_COLUMNS) as writer:
            for batch in export_range(task):
                writer.write_batch(batch)
                rows += batch.num_rows
    else:
        named = b',"%s":%s}\n' % (BROKER_COLUMN.encode(), json.dumps(task.broker).encode())
        with open(tmp, "wb") as f:
            for batch in export_range(task):
                text = jsonl_bytes(batch.drop_columns([BROKER_COLUMN]) if task.named else batch, "base64")
                # a raw line end is only ever a line's end (JSON escapes the others)
                f.write(bytes(text).replace(b"}\n", named) if task.named else text)
                rows += batch.num_rows
    os.replace(tmp, part)
    return rows


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
    def note(stage: str, rows: int | None) -> None:
        if progress:
            progress(stage, rows)

    if fmt not in FORMATS:
        raise RmqError(f"unknown export format {fmt!r}: use {' or '.join(FORMATS)}")
    if not stores:
        raise RmqError("spark-export needs a store")
    readers = _opened(stores)
    several = len(stores) > 1
    with atomic_output(out, what="spark-export", exists_hint="spark-export writes a new folder") as tmp:
        spark = get_session(master, verbose)
        note("start Spark", None)
        sc = spark.sparkContext
        target = sum(log_bytes(r) for r in readers) // max(sc.defaultParallelism * RANGES_PER_CORE, 1)
        tmp.mkdir()
        tasks = []
        for store, reader in zip(stores, readers, strict=True):
            folder = tmp / partition(store.broker) if several else tmp
            folder.mkdir(exist_ok=True)
            (folder / geometry.DATASET_FILE).write_bytes(geometry.encode(geometry.of_store(reader.config, None)))
            tasks += [RangeTask(str(Path(store.root).resolve()), store.cfg, store.broker, start, end,
                                str(folder / f"part-{len(tasks) + k:05d}{SUFFIX[fmt]}"), not several)
                      for k, (start, end) in enumerate(record_ranges(reader, target))]
        note("split", None)
        try:
            with job_errors("spark-export"):
                counts = sc.parallelize(tasks, max(len(tasks), 1)).map(lambda t: write_part(t, fmt)).collect()
        except BaseException:  # no task may write into the folder once it is removed
            with uninterrupted():
                for stop in (sc.cancelAllJobs, spark.stop):
                    with contextlib.suppress(Exception):  # a py4j call the interrupt cut may fail
                        stop()
            raise
        (tmp / "_SUCCESS").touch()
    note("export", sum(counts))
    return ExportResult(len(tasks), sum(counts), str(out))


def partition(broker: str) -> str:
    """The folder of a broker's part files in a dataset of several stores."""
    return f"{BROKER_COLUMN}={broker}"
