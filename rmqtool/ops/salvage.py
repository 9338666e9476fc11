"""`salvage STORE --into NEW`: every intact record of a damaged store written into a new store, as the broker
would have appended them there: one after another from offset 0 with the store's geometry, queue offsets
counted again per queue, consume queues, index and checkpoint written by the engine. Corrupt regions are
skipped (reported as findings); everything of each record but its offsets is kept, so offset msgIds
change and client msgIds (UNIQ_KEY) do not."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.io.schema import FIELD_NAMES
from rmqtool.io.sources import TableSource
from rmqtool.load.records import LoadOptions
from rmqtool.load.writer import LoadSummary, load
from rmqtool.ops.log_rows import log_rows
from rmqtool.report import Finding


@dataclass
class SalvageInto:
    """What a salvage into a new store read and wrote."""

    into: Path
    findings: list[Finding] = field(default_factory=list)
    written: LoadSummary | None = None

    @property
    def corrupt_regions(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    def to_json(self) -> dict:
        written = self.written or LoadSummary()
        return {"into": str(self.into), "messages": written.messages, "bytes": written.bytes,
                "endOffset": written.end_offset, "corruptRegions": self.corrupt_regions, "offsetMsgIdsChanged": True,
                "findings": [f.to_json() for f in self.findings]}


def salvage_into(reader: StoreReader, into: Path, *, progress=None) -> SalvageInto:
    """Write every intact record of `reader`'s store into the new store `into` (refused when it exists and is
    not empty); the new store takes the old one's geometry and settings."""
    into = Path(into)
    if into.exists() and (not into.is_dir() or any(into.iterdir())):
        raise RmqError(f"{into}: exists and is not empty (salvage --into writes a new store)")
    if into.resolve() == reader.paths.root.resolve():
        raise RmqError(f"{into}: is the damaged store itself (salvage --into writes a new store)")
    out = SalvageInto(into)

    def rows() -> Iterator[pa.RecordBatch]:
        for item in log_rows(reader):
            if isinstance(item, Finding):
                out.findings.append(item)
            else:
                yield item

    source = TableSource(rows(), names=FIELD_NAMES, name=str(reader.paths.root))
    opts = LoadOptions(cfg=reader.config, store_timestamp=int(time.time() * 1000))
    out.written = load(into, source, opts, repack=True, command="salvage", progress=progress)
    return out
