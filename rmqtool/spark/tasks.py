"""What Spark tasks run for a load: plain functions of a `LoadContext`, no Spark inside.

1. `stage_rows` (mapInArrow over the input): rows -> record columns (`load.records`), saved as
   one chunk per run of rows from one input block; returns a small row per chunk. A Parquet
   row group (`stage_row_group`) keeps only its plan data and is read again in step 2.
2. `write_chunk`: a chunk and its plan -> records encoded straight into the staged segments
   at their planned offsets, their consume-queue entries into the staged queue files, and
   the chunk's index keys (hash, offset) into a keys file.
3. `build_index`: every keys file in load order -> index files, chain links vectorized.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np

from rmqtool.files.paths import StorePaths, offset_name
from rmqtool.files.scratch import load_arrays, save_arrays
from rmqtool.io.schema import PRODUCER_TYPES
from rmqtool.load.records import LoadChunk, LoadOptions, producer_chunk
from rmqtool.structures.commitlog.walker import Rows, walk_once
from rmqtool.structures.consumequeue import byte_of, encode_entries, queue_keys
from rmqtool.structures.consumequeue.dispatchkernel import dispatch_records
from rmqtool.structures.index.build import fill_file

CHUNK_ROWS = 1 << 16
META_FIELDS = "file int, block long, seq int, rows long, errors string"


@dataclass(frozen=True)
class LoadContext:
    """Everything a task needs, sent to it with the function."""

    staging: str  # the staging folder
    files: tuple[str, ...]  # input files in load order (real paths)
    options: LoadOptions
    stamp: tuple[int, int] = (0, 0)  # unique-key stamp of the load

    @property
    def store(self) -> StorePaths:
        return StorePaths(self.staging)

    def work(self, name: str) -> Path:
        return Path(self.staging) / "work" / name


def chunk_name(file: int, block: int, seq: int) -> str:
    return f"{file:06d}-{block:016d}-{seq:06d}"


def _input_index(ctx: LoadContext, uri: str) -> int:
    path = os.path.realpath(unquote(urlparse(uri).path))
    try:
        return ctx.files.index(path)
    except ValueError:
        return -1


def stage_rows(batches: Iterator, ctx: LoadContext) -> Iterator:
    """mapInArrow body: chunks of rows (grouped by input block, in order) -> staged chunks."""
    import pyarrow as pa

    seq: dict[tuple[int, int], int] = {}
    for batch in batches:
        files = batch.column("_file").dictionary_encode()
        codes = files.indices.to_numpy(zero_copy_only=False)
        blocks = batch.column("_block").to_numpy(zero_copy_only=False)
        change = np.flatnonzero((codes[1:] != codes[:-1]) | (blocks[1:] != blocks[:-1])) + 1
        bounds = [0, *change.tolist(), batch.num_rows]
        out = []
        for a, b in itertools.pairwise(bounds):
            key = (_input_index(ctx, files.dictionary[int(codes[a])].as_py()), int(blocks[a]))
            for c in range(a, b, CHUNK_ROWS):
                part = batch.slice(c, min(CHUNK_ROWS, b - c))
                n = seq.get(key, 0)
                seq[key] = n + 1
                out.append((*key, n, part.num_rows, _stage_one(part, ctx, chunk_name(*key, n))))
        yield pa.RecordBatch.from_pylist([dict(zip(("file", "block", "seq", "rows", "errors"), row, strict=True))
                                          for row in out], schema=_meta_schema())


def _row_group(ctx: LoadContext, file: int, group: int) -> list:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(ctx.files[file])
    present = [n for n in PRODUCER_TYPES if n in pf.schema_arrow.names]
    return pf.read_row_group(group, columns=present).to_batches(CHUNK_ROWS)


def stage_row_group(split: tuple[int, int], ctx: LoadContext) -> list[tuple]:
    """Plan data of one row group of a Parquet input, read here with pyarrow (no trip through the
    JVM's rows): only what planning needs is kept, the rows are read again when they are written.
    Returns a (file, block, seq, rows, errors) tuple per chunk."""
    file, group = split
    return [(file, group, seq, batch.num_rows, _stage_one(batch, ctx, chunk_name(file, group, seq), keep=False))
            for seq, batch in enumerate(_row_group(ctx, file, group))]


def _meta_schema():
    import pyarrow as pa

    return pa.schema([("file", pa.int32()), ("block", pa.int64()), ("seq", pa.int32()), ("rows", pa.int64()),
                      ("errors", pa.string())])


def _stage_one(batch, ctx: LoadContext, name: str, keep: bool = True) -> str | None:
    """Check one chunk and save what planning needs (and with `keep` the records, for an input
    that cannot be read again cheaply); returns its bad rows as JSON, or None."""
    errors = []
    if "_corrupt" in batch.schema.names:
        corrupt = batch.column("_corrupt").is_valid().to_numpy(zero_copy_only=False)
        errors = [{"row": int(r), "field": "line", "reason": "malformed JSON"} for r in np.flatnonzero(corrupt)[:20]]
    if not errors:
        chunk = producer_chunk(batch, ctx.options)
        if isinstance(chunk, list):
            errors = [{"row": e.row, "field": e.field, "reason": e.reason} for e in chunk]
    if errors:
        return json.dumps(errors)
    if keep:
        chunk.save(ctx.work(f"chunk-{name}"))
    save_arrays(ctx.work(f"meta-{name}"), topics=chunk.topics, topic_idx=chunk.topic_idx, queue=chunk.queue,
          lengths=chunk.cols.lengths().astype(np.int32))
    return None


def write_chunk(name: str, ctx: LoadContext) -> tuple[int, int]:
    """Encode one planned chunk into the staged segments and queues; returns (rows, index keys)."""
    saved = ctx.work(f"chunk-{name}")
    if saved.exists():
        chunk = LoadChunk.load(saved)
    else:  # a Parquet row group: read and built again, straight into the staged files
        file, group, seq = (int(part) for part in name.split("-"))
        chunk = producer_chunk(_row_group(ctx, file, group)[seq], ctx.options)
    p = load_arrays(ctx.work(f"plan-{name}"))
    queue_id, queue_offset, phys = p["queue_id"], p["queue_offset"], p["physical_offset"]
    row_base = int(p["row_base"])
    chunk.finish(queue_id, row_base, ctx.stamp)
    cols = chunk.cols
    seg_size = ctx.options.cfg.mappedFileSizeCommitLog
    levels = np.array(ctx.options.cfg.delay_levels_ms, dtype=np.int64)
    key_hash, key_phys, cq_rows = [], [], []
    n, i = len(chunk), 0
    while i < n:
        seg_start = int(phys[i]) - int(phys[i]) % seg_size
        j = int(np.searchsorted(phys, seg_start + seg_size))
        seg = np.memmap(ctx.store.commitlog / offset_name(seg_start), dtype=np.uint8, mode="r+")
        at = int(phys[i]) - seg_start
        wrote = cols.encode_into(seg, at, queue_offset, phys, i, j)
        geo = Rows.empty(j - i)
        walked = walk_once(seg, at, at + wrote, seg_start, geo).count
        if walked != j - i:
            raise RuntimeError(f"chunk {name}: wrote {j - i} records, read back {walked}")
        found = dispatch_records(seg, geo, seg_start, levels)
        cq_rows.append(found.queue_entries())
        key_hash.append(found.key_hash.astype(np.int32))
        key_phys.append(found.key_offsets)
        del seg  # dirty pages stay in the page cache; adoption fsyncs every file
        i = j
    entries = np.concatenate(cq_rows) if cq_rows else np.zeros((0, 3), dtype=np.int64)
    _write_queues(ctx, chunk, queue_id, queue_offset, entries)
    save_arrays(ctx.work(f"keys-{name}"), hash=np.concatenate(key_hash) if key_hash else np.zeros(0, np.int32),
          phys=np.concatenate(key_phys) if key_phys else np.zeros(0, np.int64))
    return n, sum(len(k) for k in key_hash)


def _write_queues(ctx: LoadContext, chunk: LoadChunk, queue_id: np.ndarray, queue_offset: np.ndarray,
                  entries: np.ndarray) -> None:
    """Each row's consume-queue entry at its queue offset (rows of a queue are consecutive offsets)."""
    file_size = ctx.options.cfg.mappedFileSizeConsumeQueue
    group = queue_keys(chunk.topic_idx, queue_id)
    order = np.argsort(group, kind="stable")
    sorted_groups = group[order]
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    for a, b in zip(starts.tolist(), np.r_[starts[1:], len(order)].tolist(), strict=True):
        sel = order[a:b]
        first = sel[0]
        qdir = ctx.store.queue_dir(str(chunk.topics[chunk.topic_idx[first]]), int(queue_id[first]))
        data = encode_entries(entries[sel, 0], entries[sel, 1], entries[sel, 2])
        pos = byte_of(int(queue_offset[first]))
        while data:
            file_start = pos - pos % file_size
            take = min(len(data), file_start + file_size - pos)
            fd = os.open(qdir / offset_name(file_start), os.O_WRONLY)
            try:
                os.pwrite(fd, data[:take], pos - file_start)
            finally:
                os.close(fd)
            data, pos = data[take:], pos + take


def build_index(names: list[str], ctx: LoadContext, file_names: list[str], prev_end: tuple[int, int],
                part: tuple[int, int] = (0, 1)) -> dict:
    """This task's part of the (allocated) index files, from every chunk's keys in load order;
    returns what the files hold."""
    cfg = ctx.options.cfg
    per_file = cfg.maxIndexNum - 1
    hashes: list[np.ndarray] = []
    phys: list[np.ndarray] = []
    held = 0
    written: list[str] = []
    full = 0

    def flush(upto: int) -> None:
        nonlocal prev_end, held, full, hashes, phys
        h, p = np.concatenate(hashes), np.concatenate(phys)
        path = ctx.store.index / file_names[len(written)]
        buf = np.memmap(path, dtype=np.uint8, mode="r+")
        times = np.full(upto, ctx.options.store_timestamp, dtype=np.int64)
        prev_end = fill_file(buf, h[:upto].astype(np.int64), p[:upto], times, cfg.maxHashSlotNum, prev_end, part)
        del buf
        written.append(path.name)
        full += upto == per_file
        hashes, phys, held = [h[upto:]], [p[upto:]], len(h) - upto

    for name in names:
        z = load_arrays(ctx.work(f"keys-{name}"))
        hashes.append(z["hash"])
        phys.append(z["phys"])
        held += len(z["hash"])
        while held >= per_file:
            flush(per_file)
    if held:
        flush(held)
    return {"files": written, "full": full}
