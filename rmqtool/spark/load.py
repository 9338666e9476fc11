"""`spark-load`: the driver. It plans; Spark tasks read, encode and write.

Stages: (1) tasks read the input and stage each chunk of rows as record columns, returning
a row per chunk; (2) the driver plans chunk by chunk in input order (lengths, topics and
queues only, a few bytes per row, one chunk at a time), allocates the staged files and
writes the blank markers; (3) tasks encode each chunk at its planned offsets and write its
queue entries; (4) tasks build the index from the chunks' keys, each a share of every file;
(5) the driver checksums the staged files into the manifest; (6) and adopts the load
(`store.staging`).
The store lock is held throughout, and the store is untouched until adoption.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa

from rmqtool.engine.message_store import claim
from rmqtool.engine.opening import Store, open_store
from rmqtool.engine.recognition import require_store_root
from rmqtool.engine.staging import (
    Staging,
    adopt,
    adopted,
    adopting,
    check_load_id,
    discard_stale,
    loads_dir,
    read_end,
    tidy,
)
from rmqtool.errors import RmqError
from rmqtool.files.paths import StorePaths
from rmqtool.files.scratch import load_arrays, save_arrays
from rmqtool.io.schema import PRODUCER_TYPES
from rmqtool.io.sources import file_format, input_files
from rmqtool.load.planner import LoadPlanner
from rmqtool.load.records import LoadOptions
from rmqtool.spark import tasks
from rmqtool.spark.inprocess import already_loaded, is_small, load_in_process
from rmqtool.spark.session import get_session, job_errors
from rmqtool.structures import checkpoint
from rmqtool.structures.commitlog import uniqkey
from rmqtool.structures.config.topics import queues_to_register, read_table, register, topics_path
from rmqtool.structures.consumequeue.offsets import QueueOffsets
from rmqtool.structures.index import file_len, name_after

FORMATS = ("jsonl", "parquet", "csv")
Progress = Callable[[str, int | None], None]  # (stage finished, rows)
SPARK_STAGES = ["start Spark", "read", "plan", "write", "index", "checksum", "adopt"]
IN_PROCESS_STAGES = ["load"]
_INFERRED = {"properties": "map<string,string>"}  # a JSON object; keys (text or a list) are read as text


def _spark_type(name: str, kind) -> str:
    if kind is None:
        return _INFERRED.get(name, "string")
    return "long" if pa.types.is_integer(kind) else "string"


_JSON_SCHEMA = ", ".join([*(f"{n} {_spark_type(n, t)}" for n, t in PRODUCER_TYPES.items()), "_corrupt string"])
_CSV_INTS = {n: "long" for n, t in PRODUCER_TYPES.items() if t is not None and pa.types.is_integer(t)}


@dataclass
class LoadResult:
    load_id: str
    messages: int
    first_offset: int
    end_offset: int
    already: bool = False  # the load id was adopted before: nothing done
    chunks: int = 0
    in_process: bool = False  # loaded without Spark (below the row threshold)

    def to_json(self) -> dict:
        return {"loadId": self.load_id, "messages": self.messages, "firstOffset": self.first_offset,
                "endOffset": self.end_offset, "alreadyLoaded": self.already, "inProcess": self.in_process}


@dataclass(frozen=True)
class LoadInput:
    """The input files in load order, their format, and whether they load in process."""

    files: list[str]
    fmt: str
    in_process: bool = False

    @property
    def stages(self) -> list[str]:
        """The stages a load of this input reports, in order."""
        return IN_PROCESS_STAGES if self.in_process else SPARK_STAGES


def load_input(inputs: list[Path], fmt: str | None = None, threshold: int = 0) -> LoadInput:
    """The input of a load, in `fmt` or (None) in the format `import` reads its files in, which all
    must share; it loads in process when it has fewer than `threshold` rows (0: never)."""
    files = input_files(inputs)
    fmt = fmt or files_format(files)
    if fmt not in FORMATS:
        raise RmqError(f"unknown input format {fmt!r}: use {', '.join(FORMATS)}")
    return LoadInput(files, fmt, is_small(files, fmt, threshold))


def files_format(files: list[str]) -> str:
    """The one format of `files` by import's rule (`io.sources.file_format`); refused when they differ."""
    first: dict[str, str] = {}  # format -> its first file
    for f in files:
        first.setdefault(file_format(f), f)
    if len(first) > 1:
        named = ", ".join(f"{Path(f).name} is {k}" for k, f in first.items())
        raise RmqError(f"the inputs are of different formats ({named}): load one format at a time, or give --format")
    return next(iter(first))


def default_load_id(files: list[str], fmt: str, opts: LoadOptions, explicit_ts: bool) -> str:
    """Names a load by its input (paths, sizes, times) and settings, so a repeated command is recognised."""
    h = hashlib.sha256()
    for f in files:
        st = os.stat(f)
        h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    h.update(f"{fmt}\0{opts.queues}\0{opts.queue_by}\0{opts.store_timestamp if explicit_ts else ''}".encode())
    return "load-" + h.hexdigest()[:16]


def _read(spark, files: list[str], fmt: str, partitions: int | None):
    from pyspark.sql import functions as F

    parts = partitions or spark.sparkContext.defaultParallelism  # every core reads a share of the input
    total = sum(os.path.getsize(f) for f in files)
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(max(total // parts + 1, 1 << 20)))
    spark.conf.set("spark.sql.files.openCostInBytes", "0")
    if fmt == "jsonl":
        df = spark.read.schema(_JSON_SCHEMA).option("columnNameOfCorruptRecord", "_corrupt").json(files)
    elif fmt == "parquet":
        df = spark.read.parquet(*files)
        df = df.select(*[c for c in df.columns if c in PRODUCER_TYPES])
    else:
        df = spark.read.option("header", "true").option("escape", "\"").csv(files)  # RFC 4180 quotes
        df = df.select(*[F.col(c).cast(_CSV_INTS[c]) if c in _CSV_INTS else F.col(c)
                         for c in df.columns if c in PRODUCER_TYPES])
    return df.select("*", F.col("_metadata.file_path").alias("_file"),
                     F.col("_metadata.file_block_start").alias("_block"))


def spark_load(inputs: list[Path] | LoadInput, store: Path, opts: LoadOptions, *, fmt: str | None = None,
               threshold: int = 0, master: str = "local[*]", partitions: int | None = None,
               load_id: str | None = None, explicit_ts: bool = False, progress: Progress | None = None,
               register_topics: bool = True, verbose: bool = False) -> LoadResult:
    """Load the rows into `store`; an input of fewer than `threshold` rows (0: never) loads in this
    process instead (`spark.inprocess`), into the same bytes. `verbose` lets Spark's log through."""
    job = inputs if isinstance(inputs, LoadInput) else load_input(inputs, fmt, threshold)
    files, fmt = job.files, job.fmt
    load_id = check_load_id(load_id) if load_id else default_load_id(files, fmt, opts, explicit_ts)
    opened = open_store(store, opts.cfg)
    opts = replace(opts, cfg=opened.config)
    paths = opened.paths
    if job.in_process:
        return _in_process(job, opened, opts, load_id, register_topics, progress)
    created = not paths.root.exists()
    if register_topics:
        require_store_root(paths.root, "a write")
        read_table(topics_path(paths.root))  # a topic table that cannot be merged: refused before a write
    lock = claim(opened, create=True)
    failed = True
    try:
        record = adopted(paths, load_id)
        if record is not None:
            tidy(paths)
            return _already(load_id, record)
        discard_stale(paths)
        staging = Staging(paths, load_id)
        staging.create()
        try:
            with job_errors("spark-load"):
                session = get_session(master, verbose)
                _note(progress, "start Spark", None)
                result = _run(session, files, fmt, partitions, paths, staging, opts, progress, register_topics)
        except RmqError as e:
            _drop_staging(paths)
            raise type(e)(f"{e}{'' if created else _left_over(paths)}") from None
        except BaseException:
            _drop_staging(paths)
            raise
        failed = False
        return result
    finally:
        if failed and created and not adopting(paths):  # a store this load made and never filled: remove it
            shutil.rmtree(paths.root, ignore_errors=True)
        lock.release()


def _in_process(job: LoadInput, store: Store, opts: LoadOptions, load_id: str, register_topics: bool,
                progress: Progress | None) -> LoadResult:
    record = already_loaded(store, load_id)
    if record is not None:
        return _already(load_id, record)
    messages, first, end = load_in_process(job.files, job.fmt, store, opts, load_id, register_topics)
    _note(progress, "load", messages)
    return LoadResult(load_id, messages, first, end, in_process=True)


def _already(load_id: str, record: dict) -> LoadResult:
    return LoadResult(load_id, record["messages"], record["base"]["commitlogEnd"], record["end"], already=True)


def _drop_staging(paths: StorePaths) -> None:
    """After a failure before the journal the store is untouched: drop the staging, and `.spark-load/`."""
    if not adopting(paths):
        discard_stale(paths)
        tidy(paths)


def _left_over(paths: StorePaths) -> str:
    """What a failed load leaves in the store, for the end of its error line."""
    if adopting(paths):
        return (f"; {loads_dir(paths)} holds a load half adopted: the next writer (spark-load, import, append, "
                "recover) finishes it")
    if loads_dir(paths).exists():
        return f"; {loads_dir(paths)} is left over: the next spark-load removes it"
    return ""


def _slices(spark, items: int, partitions: int | None) -> int:
    """Tasks for `items` pieces of work: one per core (a Python task costs tens of ms to start)."""
    return max(1, min(items, partitions or spark.sparkContext.defaultParallelism))


def _note(progress: Progress | None, stage: str, rows: int | None) -> None:
    if progress:
        progress(stage, rows)


def _run(spark, files, fmt, partitions, paths: StorePaths, staging: Staging, opts: LoadOptions, progress,
         register_topics: bool) -> LoadResult:
    cfg = opts.cfg
    end = read_end(paths, cfg)
    if opts.store_host is None and end.store_host is not None:  # new records name the store's broker, as import's
        opts = replace(opts, store_host=end.store_host)
    ctx = tasks.LoadContext(str(staging.dir), tuple(files), opts, uniqkey.load_stamp(opts.store_timestamp))
    if fmt == "parquet":  # tasks read their row groups themselves
        import pyarrow.parquet as pq

        splits = [(k, g) for k, f in enumerate(files) for g in range(pq.ParquetFile(f).num_row_groups)]
        chunks = sorted(spark.sparkContext.parallelize(splits, _slices(spark, len(splits), partitions)).flatMap(
            lambda split: tasks.stage_row_group(split, ctx)).collect()) if splits else []
    else:
        df = _read(spark, files, fmt, partitions)
        meta = df.mapInArrow(lambda it: tasks.stage_rows(it, ctx), tasks.META_FIELDS).collect()
        chunks = sorted((r["file"], r["block"], r["seq"], r["rows"], r["errors"]) for r in meta)
    _report_bad_rows(chunks, files)
    total_rows = sum(c[3] for c in chunks)
    _note(progress, "read", total_rows)

    planner = LoadPlanner(end.commitlog_end, cfg.mappedFileSizeCommitLog, opts.queues, QueueOffsets(end.table()))
    blanks = []
    names = [tasks.chunk_name(f, b, s) for f, b, s, _, _ in chunks]
    for name in names:
        m = load_arrays(ctx.work(f"meta-{name}"))
        plan = planner.plan([str(t) for t in m["topics"]], m["topic_idx"], m["queue"], m["lengths"])
        blanks += plan.blanks.tolist()
        save_arrays(ctx.work(f"plan-{name}"), queue_id=plan.queue_id, queue_offset=plan.queue_offset,
                    physical_offset=plan.physical_offset, row_base=plan.row_base)
    staging.prepare_commitlog(end, planner.segments(), cfg.mappedFileSizeCommitLog, blanks)
    staging.prepare_queues(end, planner.first_offsets, planner.table, cfg.mappedFileSizeConsumeQueue)
    _note(progress, "plan", total_rows)

    sc = spark.sparkContext
    wrote = sc.parallelize(names, _slices(spark, len(names), partitions)).map(
        lambda n: tasks.write_chunk(n, ctx)).collect() if names else []
    _note(progress, "write", total_rows)

    index_info = {"files": [], "full": 0}
    keys = sum(k for _, k in wrote)
    if cfg.messageIndexEnable and keys:
        per_file = cfg.maxIndexNum - 1
        file_names: list[str] = []
        last = end.index.last_name if end.index else None
        for _ in range(-(-keys // per_file)):
            last = name_after(last, opts.store_timestamp)
            file_names.append(last)
        prev = (end.index.end_phy, end.index.end_ts) if end.index else (0, 0)
        staging.prepare_index(file_names, file_len(cfg.maxHashSlotNum, cfg.maxIndexNum))
        parts = _slices(spark, cfg.maxHashSlotNum, partitions)  # each task writes a share of every file
        index_info = sc.parallelize(range(parts), parts).map(
            lambda k: tasks.build_index(names, ctx, file_names, prev, (k, parts))).collect()[0]
    _note(progress, "index", total_rows)

    cp = end.checkpoint
    if total_rows:
        cp = checkpoint.Checkpoint(opts.store_timestamp, opts.store_timestamp,
                                   opts.store_timestamp if index_info["full"] else cp.indexMsgTimestamp)
    staging.write_checkpoint(cp)
    doc = {"storeTimestamp": opts.store_timestamp, "messages": total_rows, "base": end.to_json(),
           "end": planner.end, "inputs": files}
    staging.write_manifest(doc)
    _note(progress, "checksum", total_rows)
    adopt(paths, staging, cfg)
    if register_topics:
        needs: dict[str, int] = {}
        for topic, queue_id in planner.first_offsets:
            needs[topic] = max(needs.get(topic, 0), queue_id + 1)
        register(paths.root, queues_to_register(paths.root, needs))
    _note(progress, "adopt", total_rows)
    return LoadResult(staging.load_id, total_rows, end.commitlog_end, planner.end, chunks=len(names))


def _report_bad_rows(chunks, files: list[str]) -> None:
    """The first bad row as `FILE: row N: field: reason` (rows counted from 1 in each file)."""
    before: dict[int, int] = {}
    bad = []
    for f, _, _, rows, errors in chunks:
        if errors:
            for e in json.loads(errors):
                bad.append((files[f] if f >= 0 else "?", before.get(f, 0) + e["row"] + 1, e["field"], e["reason"]))
        before[f] = before.get(f, 0) + rows
    if bad:
        path, row, field, reason = bad[0]
        more = f" (and {len(bad) - 1} more bad rows)" if len(bad) > 1 else ""
        raise RmqError(f"{path}: row {row}: {field}: {reason}{more}; nothing was loaded")
