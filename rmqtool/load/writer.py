"""Sequential loads into a store: `import` (an export, or producer rows) and `append --batch`.

One pass over the input. A background thread reads each chunk of rows and turns it into
checked records (`load.records`); the caller's thread plans it from the store's end
(`load.planner`) and has the engine encode it at the planned offsets, while the dispatcher
follows into consume queues and the index. Nothing is written before the first chunk is
checked; a row refused in a later chunk undoes the load (`store.rollback`), so the store ends
byte for byte where it began, and a store the load created is removed. Measured against
checking the whole input first and writing in a second pass, this saves the cost of building
every record twice (see docs/engine.md).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np

from rmqtool.engine.message_store import MessageStore
from rmqtool.engine.opening import Store, open_store
from rmqtool.engine.reader import StoreReader
from rmqtool.engine.rollback import transaction
from rmqtool.errors import RmqError
from rmqtool.io import geometry
from rmqtool.io.pipeline import ahead
from rmqtool.io.schema import PRODUCER_TYPES, STORED_ONLY, STORED_TYPES
from rmqtool.io.sources import BadRow, Source
from rmqtool.load.existing import ExistingRecords
from rmqtool.load.planner import LoadPlanner, PlacementError, QueueRotation
from rmqtool.load.records import LoadChunk, LoadOptions, RowError, producer_chunk, stored_chunk
from rmqtool.structures.commitlog import uniqkey
from rmqtool.structures.commitlog.delay import SCHEDULE_TOPIC

CHUNK_ROWS = 1 << 16
CHUNK_BYTES = 16 << 20  # of input per chunk: with large bodies a chunk has fewer rows, so memory stays flat
Progress = Callable[[int], None]  # called with the number of messages just written


@dataclass
class LoadSummary:
    """What a load wrote."""

    messages: int = 0
    bytes: int = 0
    first_offset: int | None = None
    end_offset: int | None = None
    puts: int = 0  # broker batches (append --batch)
    as_stored: bool = False
    repacked: bool = False  # an export's records written at new offsets (their offset msgIds changed)
    skipped: int = 0  # records of an export the store held already (--skip-existing)

    def to_json(self) -> dict:
        doc = {"messages": self.messages, "bytes": self.bytes, "firstOffset": self.first_offset,
               "endOffset": self.end_offset}
        if self.puts:
            doc["puts"] = self.puts
        if self.skipped:
            doc["skippedExisting"] = self.skipped
        if self.repacked:
            doc["repacked"] = True
        return doc


def is_export(source: Source) -> bool:
    """Records as stored (an export) rather than producer rows."""
    return any(n in source.columns() for n in STORED_ONLY)


Written = Callable[[int, np.ndarray, np.ndarray], None]  # (first row, physical offsets, lengths) of a chunk


def load(root, source: Source, opts: LoadOptions, *, flush: str | None = None, batch_size: int | None = None,
         register_topics: bool = True, progress: Progress | None = None, delayed: bool = True,
         clock: Callable[[], int] | None = None, skip_existing: bool = False,
         on_written: Written | None = None, command: str = "import", repack: bool = False) -> LoadSummary:
    """Write every row of `source` into the store at `root` (created when missing). An export's
    records go back as they were stored; producer rows become a producer's messages, in broker
    batches of up to `batch_size` when given. A refused row is an RmqError naming it; the
    store is then as it was. `delayed=False` refuses delayed producer rows (spark-load's rule);
    `clock` names new index files (default: now). An export's records the store holds already are
    refused, or with `skip_existing` skipped and counted. `root` may be a MessageStore the caller holds
    open (a master serving slaves): it stays open. `on_written` hears of every chunk once written. The
    write is a transaction (engine/journal.py) named `command`: interrupted, it is rolled back. With
    `repack` an export's records are written as the broker would have appended them to this store: at the
    write position, one after another, their queue offsets continuing each queue's (their offset msgIds
    change); everything else of each record is kept. The write commits as the store closes, just before this
    returns: a caller reports it at once (docs/commands.md: a killed writer's report is the resume point)."""
    stored = is_export(source)
    held = root if isinstance(root, MessageStore) else None
    opened = held.opened if held else root if isinstance(root, Store) else open_store(root, opts.cfg)
    if held is None and stored:
        opened = _with_geometry(opened, source, repack)
    opts = replace(opts, cfg=opened.config)
    created = held is None and not opened.root.exists()
    store = held
    if store is None and not created:
        store = MessageStore(opened, flush=flush, register_topics=register_topics, clock=clock)
    if store is not None and opts.store_host is None and store.store_host is not None:
        opts = replace(opts, store_host=store.store_host)  # rows that name no storeHost take the store's broker's
    summary = LoadSummary(as_stored=stored, repacked=stored and repack)
    existing = None
    if stored and not repack and store is not None and store.commitlog.max_offset > 0:
        existing = ExistingRecords(StoreReader(opened), store.commitlog.max_offset,
                                   skip_existing)
    try:
        chunks = ahead(_chunks(source, opts, stored, QueueRotation(opts.queues) if delayed else None, existing))
        first = next(chunks, None)  # a bad first chunk fails before a new store is made
        if store is None:
            store = MessageStore(opened, flush=flush, register_topics=register_topics, clock=clock)
        log = store.commitlog
        summary.first_offset = log.max_offset
        planner = LoadPlanner(log.max_offset, opts.cfg.mappedFileSizeCommitLog, opts.queues, log.queue_offsets,
                              rotation=QueueRotation(opts.queues))
        with transaction(store, command, journaled=held is None):
            stamp = uniqkey.load_stamp(opts.store_timestamp)
            for base, chunk in _with(first, chunks):
                placed = _write(store, planner, chunk, base, stamp, source, batch_size, summary, repack)
                if on_written is not None:
                    on_written(base, placed, chunk.cols.lengths())
                if progress:
                    progress(len(chunk))
        summary.end_offset = log.max_offset
        summary.bytes = summary.end_offset - summary.first_offset
        summary.skipped = existing.skipped if existing else 0
    except BaseException:
        if store is not None and held is None:
            store.close()
        if created:  # a store this load made goes whole, a skeleton made before a failure too
            shutil.rmtree(opened.root, ignore_errors=True)
        raise
    if held is None:
        store.close()  # the commit
    return summary


def _with_geometry(opened: Store, source: Source, repack: bool) -> Store:
    """The store an export goes into, with the geometry the export carries (`io.geometry`): a new store takes
    it where --config sets nothing (a contradiction is refused; repacked records take the --config's); an
    existing one must have the exported store's segment size unless the records are repacked."""
    travelled = getattr(source, "geometry", None)
    if not travelled:
        return opened
    if not opened.segments:
        return open_store(opened.root, geometry.applied(opened.config, travelled, source.name, strict=not repack))
    size, here = travelled.get("mappedFileSizeCommitLog"), opened.config.mappedFileSizeCommitLog
    if size is not None and size != here and not repack:
        raise RmqError(f"{source.name} was exported from a store with mappedFileSizeCommitLog={size}, but the "
                       f"segments of {opened.root} are {here} bytes: its records' commitLogOffsets do not fit them "
                       "(--config cannot change a store's segments): import it into a new store, or with --repack")
    return opened


def _with(first, rest: Iterator) -> Iterator:
    if first is not None:
        yield first
        yield from rest


def _chunks(source: Source, opts: LoadOptions, stored: bool, rotation: QueueRotation | None,
            existing: ExistingRecords | None = None) -> Iterator[tuple[int, LoadChunk]]:
    """(first row, chunk) of every batch of the input, in order, past the records the store holds
    already; the first bad rows are an RmqError."""
    base = 0
    for whole in _batches(source, STORED_TYPES if stored else PRODUCER_TYPES):
        if existing is not None:
            held = existing.leading(whole, lambda k, at=base: source.where(at + k))
            whole, base = whole.slice(held), base + held
            if not whole.num_rows:
                continue
        rows = max(1, min(CHUNK_ROWS, CHUNK_BYTES * whole.num_rows // max(whole.nbytes, 1)))
        for at in range(0, whole.num_rows, rows):
            batch = whole.slice(at, rows)
            chunk = stored_chunk(batch, opts.cfg) if stored else producer_chunk(batch, opts, rotation)
            if isinstance(chunk, list):
                raise RmqError(describe(source, base, chunk))
            yield base, chunk
            base += batch.num_rows


def _batches(source: Source, types) -> Iterator:
    """The input's batches; a line the source cannot read as a row is refused as a bad row is."""
    try:
        yield from source.batches(types, CHUNK_ROWS)
    except BadRow as e:
        raise RmqError(f"{e}; nothing was written") from None


def describe(source: Source, base: int, errors: list[RowError]) -> str:
    """`WHERE: field: reason` of the first bad row, and how many more were found."""
    e = errors[0]
    others = len({x.row for x in errors} - {e.row})
    more = f" (and {others} more bad rows in its chunk)" if others else ""
    return f"{source.where(base + e.row)}: {e.field}: {e.reason}{more}; nothing was written"


def _write(store: MessageStore, planner: LoadPlanner, chunk: LoadChunk, base: int, stamp: tuple[int, int],
           source: Source, batch_size: int | None, summary: LoadSummary, repack: bool = False) -> np.ndarray:
    """Write one chunk; the physical offsets its records went to (an export's own unless `repack`)."""
    cols = chunk.cols
    topic_names = chunk.topics.tolist()
    groups = None
    if batch_size is not None:
        groups = broker_batches(chunk, batch_size)
        cols.born_timestamp = cols.born_timestamp[np.repeat(groups, np.diff(np.r_[groups, len(chunk)]))]
        summary.puts += len(groups)
    try:
        plan = planner.plan(topic_names, chunk.topic_idx, chunk.queue, cols.lengths(), cols.sys_flag,
                            stored_offset=None if repack else chunk.stored_offset, groups=groups)
    except PlacementError as e:
        raise RmqError(describe(source, base, [RowError(e.row, "commitLogOffset", str(e))])) from None
    chunk.finish(plan.queue_id, plan.row_base, stamp)
    store.write_planned(cols, plan.physical_offset, plan.queue_offset)
    summary.messages += len(chunk)
    queues = np.zeros(len(topic_names), dtype=np.int64)
    np.maximum.at(queues, chunk.topic_idx, plan.queue_id + 1)
    for name, need in zip(topic_names, queues.tolist(), strict=True):
        store.note_written(name, need)
    for name, need in (chunk.delayed or {}).items():
        store.note_written(name, need)
    return plan.physical_offset


def broker_batches(chunk: LoadChunk, batch_size: int) -> np.ndarray:
    """First rows of the broker batches a producer would send: runs of consecutive rows with the
    same topic, queue and hosts, at most `batch_size` long; a delayed row goes alone."""
    cols = chunk.cols
    n = len(chunk)
    delayed = chunk.topics[chunk.topic_idx] == SCHEDULE_TOPIC
    same = np.ones(n, dtype=bool)
    same[0] = False
    for key in (chunk.topic_idx, chunk.queue, cols.born_port, cols.store_port):
        same[1:] &= key[1:] == key[:-1]
    for key in (cols.born_address, cols.store_address):
        same[1:] &= (key[1:] == key[:-1]).all(axis=1)
    same[1:] &= ~delayed[1:] & ~delayed[:-1]
    run_start = np.flatnonzero(~same)
    rank = np.arange(n) - np.repeat(run_start, np.diff(np.r_[run_start, n]))
    return np.flatnonzero(~same | (rank % batch_size == 0))
