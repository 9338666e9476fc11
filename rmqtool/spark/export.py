"""`spark-export`: the log cut into byte ranges on record boundaries, each range read by its own task.

The driver walks record headers to cut every segment into ranges of about the same size (at
least one per core in all), each starting where a record starts. A task reads its range through
the one read path (`ops.log_rows`) and hands the row batches to Spark with `mapInArrow`.
Partition k holds range k, so the dataset's part files are in log order; rows are those of
`rmqtool export`. The store's geometry goes in the folder (`io.geometry.DATASET_FILE`): `import` of a part
file into a new store takes it.
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

FORMATS = ("parquet", "jsonl")
STAGES = ["start Spark", "split", "export"]
RANGES_PER_CORE = 2  # a little slack for ranges that end up uneven
# Spark's Arrow conversion takes the 32-bit offset types
SPARK_SCHEMA = pa.schema([pa.field(f.name, {pa.large_binary(): pa.binary(), pa.large_string(): pa.string()}
                                   .get(f.type, f.type)) for f in MESSAGE_SCHEMA])


@dataclass
class ExportResult:
    ranges: int
    messages: int
    out: str

    def to_json(self) -> dict:
        return {"ranges": self.ranges, "messages": self.messages, "out": self.out}


def record_ranges(reader: StoreReader, parts: int) -> list[tuple[int, int]]:
    """(start, end) physical offsets covering the log, `parts` or more of them, each starting at a record."""
    segments = [s for s in reader.segments if s.size]
    if not segments:
        return []
    extent = {s.start: (data_end(s.path) or s.size) for s in segments}
    target = max(sum(extent.values()) // max(parts, 1), 1)
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


def export_range(root: str, cfg: StoreConfig, start: int, end: int) -> Iterator[pa.RecordBatch]:
    """Row batches of the records starting in [start, end) (findings are `verify`'s and `export`'s to report)."""
    from rmqtool.ops.log_rows import log_rows

    reader = StoreReader(root, cfg)
    for item in log_rows(reader, from_offset=start, until=end, workers=1):  # Spark runs a task per core
        if isinstance(item, pa.RecordBatch):
            yield item.cast(SPARK_SCHEMA)


def _ranges_task(batches: Iterator, root: str, cfg: StoreConfig, counter) -> Iterator:
    for batch in batches:
        for start, end in zip(batch.column("start").to_pylist(), batch.column("end").to_pylist(), strict=True):
            for out in export_range(root, cfg, start, end):
                counter.add(out.num_rows)
                yield out


def spark_export(store: Path, out: Path, cfg: StoreConfig, *, fmt: str = "parquet", master: str = "local[*]",
                 verbose: bool = False, progress: Callable[[str, int | None], None] | None = None) -> ExportResult:
    """Write the store's messages to the new folder `out`, which appears whole or not at all (`io.atomic`);
    `progress(stage, rows)` hears of each of STAGES done."""
    from rmqtool.spark.session import get_session, job_errors

    def note(stage: str, rows: int | None) -> None:
        if progress:
            progress(stage, rows)

    if fmt not in FORMATS:
        raise RmqError(f"unknown export format {fmt!r}: use {' or '.join(FORMATS)}")
    with atomic_output(out, what="spark-export", exists_hint="spark-export writes a new folder") as tmp:
        reader = StoreReader(store, cfg)
        if reader.single_file:
            raise RmqError(f"{store}: spark-export reads a store root, not one segment")
        if reader.dledger:
            raise RmqError(f"{store}: spark-export splits plain commitlogs; for a DLedger log use `rmqtool export`")
        spark = get_session(master, verbose)
        note("start Spark", None)
        sc = spark.sparkContext
        ranges = record_ranges(reader, sc.defaultParallelism * RANGES_PER_CORE)
        note("split", None)
        counter = sc.accumulator(0)
        root = str(Path(store).resolve())
        rdd = sc.parallelize(ranges, max(len(ranges), 1))
        todo = spark.createDataFrame(rdd, "start long, end long")
        from pyspark.sql.pandas.types import from_arrow_schema

        df = todo.mapInArrow(lambda it: _ranges_task(it, root, cfg, counter), from_arrow_schema(SPARK_SCHEMA))
        writer = df.write.mode("errorifexists")
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
        (tmp / geometry.DATASET_FILE).write_bytes(geometry.encode(geometry.of_store(reader.config, None)))
    note("export", counter.value)
    return ExportResult(len(ranges), counter.value, str(out))
