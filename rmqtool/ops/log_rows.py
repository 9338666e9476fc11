"""The commitlog read path: every record from an offset on as Arrow rows, findings in offset order.

One scan (`StoreReader.scan`, the scanner's `scan` policy) feeds decode, export, salvage and
spark-export; each consumer gets batches of the message schema (`io.schema`) interleaved
with the corruption it met, so no consumer builds a Python object per record. Rows are built
(and, with `render`, turned into output) on every core while the scan goes on
(`io.pipeline.ordered_map`), and still come out in log order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import pyarrow as pa

from rmqtool.engine.reader import StoreReader
from rmqtool.files.segments import release_pages
from rmqtool.io.jsonl import jsonl_bytes
from rmqtool.io.pipeline import WORKERS, ordered_map
from rmqtool.io.rows import decompressed, message_rows, uncompressed
from rmqtool.report import Finding
from rmqtool.structures.commitlog.chunk import ScanChunk
from rmqtool.structures.commitlog.geometry import missing_segment_at
from rmqtool.structures.commitlog.message import DECOMPRESSED_FORMATS
from rmqtool.structures.commitlog.scan import RecordBatch
from rmqtool.structures.commitlog.selection import Selection

R = TypeVar("R")
STORED, PLAIN, UNCOMPRESSED = "stored", "plain", "uncompressed"  # the bodies rows carry


@dataclass
class Tally:
    """What a selection saw, filled in as the scan goes: records read, records that passed each filter of the
    selection (`Selection.parts`, in order), and records kept."""

    scanned: int = 0
    kept: int = 0
    passed: list[int] = field(default_factory=list)

    def why_empty(self, reader: StoreReader, from_offset: int | None, selection: Selection,
                  count: int | None = None) -> str | None:
        """When a selection that asked for something kept nothing, the part of the question that excluded
        everything (exit 3 for the caller); None when records were kept, none were asked for (`count` 0) or
        nothing narrowed the question."""
        if self.kept or count == 0:
            return None
        if self.scanned == 0 and from_offset:
            return f"no record starts at or after offset {from_offset} ({reader.describe_range()})"
        return selection.why_empty(self.scanned, self.passed, f" from offset {from_offset}" if from_offset else "")


def hole_note(reader: StoreReader, from_offset: int | None) -> str | None:
    """A note when `from_offset` falls in a hole of the log (a missing segment): reading starts after it."""
    if not from_offset or missing_segment_at(reader.segments, reader.segment_size, from_offset) is None:
        return None
    return f"{reader.describe_absence(from_offset)}: reading from the next segment on"


def log_rows(reader: StoreReader, *, from_offset: int = 0, until: int | None = None, count: int | None = None,
             selection: Selection | None = None, verify_crc: bool = True, bodies: str = STORED,
             render: Callable[[pa.RecordBatch], R] | None = None,
             workers: int = WORKERS, tally: Tally | None = None) -> Iterator[pa.RecordBatch | R | Finding]:
    """Row batches of the records in [from_offset, until) and the findings between them, in offset order.

    `count` stops after that many rows, `selection` keeps the records it selects (topic, queue, store
    time, tag, key), counted in `tally`. Every compressed body is
    decompressed once: one that does not is a warning finding just before its row. `bodies` says
    what the rows carry: the stored bodies (STORED), the bodies a consumer gets (PLAIN), or records
    as if never compressed (UNCOMPRESSED: plain body, codec bits cleared, bodyCRC and storeSize to
    match). `render` turns each row
    batch into what the caller writes (JSON lines, ...) in the same worker that built it.
    """
    batches = log_batches(reader, from_offset=from_offset, until=until, count=count, selection=selection,
                          verify_crc=verify_crc, tally=tally)
    yield from rows_of(batches, reader.config.delay_levels_ms, bodies=bodies, render=render, workers=workers)


def rows_of(batches: Iterable[RecordBatch | Finding], delay_levels_ms: list[int], *, bodies: str = STORED,
            render: Callable[[pa.RecordBatch], R] | None = None,
            workers: int = WORKERS) -> Iterator[pa.RecordBatch | R | Finding]:
    """`log_rows` of scanner batches from anywhere (a scan, a follow): rows built (and rendered) `workers` at
    a time, in order, findings passed through."""
    levels = np.asarray(delay_levels_ms, dtype=np.int64)

    def rows(batch: RecordBatch) -> list:
        out = message_rows(batch, levels)
        unpacked, failed = decompressed(out, batch.file)
        if bodies == PLAIN:
            out = unpacked
        elif bodies == UNCOMPRESSED:
            out = uncompressed(out, unpacked, failed)
        done = [item if isinstance(item, Finding) or render is None else render(item)
                for item in _warnings_before_rows(out, failed)]
        if len(batch):  # the pages the rows were built from, faulted in again by this worker: let them go
            release_pages(batch.buf, int(batch.pos[0]), int(batch.pos[-1]))
        return done

    for item in ordered_map(rows, batches, passes=lambda item: isinstance(item, Finding), workers=workers):
        if isinstance(item, list):
            yield from item
        else:
            yield item


def _warnings_before_rows(rows: pa.RecordBatch, failed: dict[int, Finding]) -> Iterator[pa.RecordBatch | Finding]:
    """`rows` cut so that each row's warning comes just before it."""
    at = 0
    for i in sorted(failed):
        if i > at:
            yield rows.slice(at, i - at)
        yield failed[i]
        at = i
    if at < rows.num_rows:
        yield rows.slice(at) if at else rows


def log_batches(reader: StoreReader, *, from_offset: int = 0, until: int | None = None, count: int | None = None,
                selection: Selection | None = None, verify_crc: bool = True,
                tally: Tally | None = None) -> Iterator[RecordBatch | Finding]:
    """The scanner's batches of the selected records and the findings between them, in offset order."""
    if from_offset == 0:
        yield from reader.sequence_findings()
    yield from selected(reader.scan(from_offset, verify_crc=verify_crc, until=until), count=count,
                        selection=selection, tally=tally)


def selected(chunks: Iterable[ScanChunk], *, count: int | None = None, selection: Selection | None = None,
             tally: Tally | None = None) -> Iterator[RecordBatch | Finding]:
    """The records of scan chunks (a scan's, a follow's) `selection` selects (all without one) and the findings
    between them, in offset order, ending after `count` selected records; `tally` counts what was read, what
    passed each filter and what was kept."""
    left = count
    tally = tally if tally is not None else Tally()
    for chunk in chunks:
        batch = chunk.batch
        tally.scanned += len(batch) if batch is not None else 0
        if batch is not None and selection is not None:
            batch = selection.narrow(batch, tally.passed)
        findings = chunk.findings
        if batch is not None and left is not None and len(batch) >= left:  # the count ends in this chunk: so do
            batch = batch.select(np.arange(len(batch)) < left)  # the findings, none read past its last record
            last = int(batch.offsets[-1]) if len(batch) else -1
            findings = [f for f in findings if f.offset < last]
        tally.kept += len(batch) if batch is not None else 0
        yield from _in_offset_order(batch if batch is not None and len(batch) else None, findings)
        if batch is not None and left is not None:
            left -= len(batch)
            if left <= 0:
                return


def _in_offset_order(batch: RecordBatch | None, findings: list[Finding]) -> Iterator[RecordBatch | Finding]:
    """`batch` cut at each finding's offset, so that everything comes out in offset order."""
    if batch is None:
        yield from findings
        return
    offsets = batch.offsets
    rows = np.arange(len(batch))
    at = 0
    for f in sorted(findings, key=lambda f: f.offset):
        cut = int(np.searchsorted(offsets, f.offset))
        if cut > at:
            yield batch.select((rows >= at) & (rows < cut))
            at = cut
        yield f
    if at < len(batch):
        yield batch.select(rows >= at) if at else batch


def log_lines(reader: StoreReader, body: str = "base64", **selection) -> Iterator[memoryview | Finding]:
    """`log_rows` rendered as JSON lines (one bytes-like block per batch) by the read path's workers."""
    return log_rows(reader, **line_rendering(body), **selection)


def bodies_for(body: str) -> str:
    """The bodies rows carry to be shown as `body`: the ones a consumer gets (a compressed one decompressed),
    except for `stored` (and `none`), the bytes in the record."""

    return PLAIN if body in DECOMPRESSED_FORMATS else STORED


def line_rendering(body: str) -> dict:
    """The `bodies` and `render` arguments of `log_rows` (or `rows_of`) that make JSON lines with `body`."""

    return {"bodies": bodies_for(body), "render": lambda rows: jsonl_bytes(rows, body)}
