"""The commitlog read path: every record from an offset on as Arrow rows, findings in offset order.

One scan (`StoreReader.scan`, the scanner's `scan` policy) feeds decode, export, salvage and
spark-export; each consumer gets batches of the message schema (`io.schema`) interleaved
with the corruption it met, so no consumer builds a Python object per record.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from rmqtool.format.finding import Finding
from rmqtool.io.rows import message_rows
from rmqtool.store.reader import StoreReader


def log_rows(reader: StoreReader, *, from_offset: int = 0, until: int | None = None, count: int | None = None,
             topic: str | None = None, verify_crc: bool = True) -> Iterator[pa.RecordBatch | Finding]:
    """Row batches of the records in [from_offset, until) and the findings between them, in offset order.

    `count` stops after that many rows, `topic` keeps one topic's records.
    """
    levels = np.asarray(reader.config.delay_levels_ms, dtype=np.int64)
    left = count
    if from_offset == 0:
        yield from reader.sequence_findings()
    for chunk in reader.scan(from_offset, verify_crc=verify_crc, until=until):
        batch = chunk.batch
        if batch is not None and len(batch) and topic is not None:
            ids, names = batch.topics()
            batch = batch.select(np.isin(ids, [i for i, name in enumerate(names) if name == topic]))
        if batch is not None and left is not None and len(batch) > left:
            batch = batch.select(np.arange(len(batch)) < left)
        rows = message_rows(batch, levels) if batch is not None and len(batch) else None
        yield from _in_offset_order(rows, chunk.findings)
        if rows is not None and left is not None:
            left -= rows.num_rows
            if left <= 0:
                return


def _in_offset_order(rows: pa.RecordBatch | None, findings: list[Finding]) -> Iterator[pa.RecordBatch | Finding]:
    """`rows` cut at each finding's offset, so that everything comes out in offset order."""
    if rows is None:
        yield from findings
        return
    offsets = rows.column("commitLogOffset").to_numpy()
    at = 0
    for f in sorted(findings, key=lambda f: f.offset):
        cut = int(np.searchsorted(offsets, f.offset))
        if cut > at:
            yield rows.slice(at, cut - at)
            at = cut
        yield f
    if at < rows.num_rows:
        yield rows.slice(at) if at else rows
