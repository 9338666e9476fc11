"""`export` and `salvage`: every intact message of a store, as JSONL or Parquet, from the one read path.

Rows keep the stored bytes (an export imports back byte for byte); corrupt regions are skipped
and returned as findings. JSONL is written by the column-wise line writer (`io.jsonl`); Parquet
gets the row batches as they are, one row group per batch. The store's geometry goes with the rows
(`io.geometry`): Parquet key-value metadata, a `<out>.geometry.json` sidecar beside a JSONL file.
The format is the one `import` reads the name as; CSV cannot hold an export (binary bodies, a
properties map) and is refused.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rmqtool.engine.reader import StoreReader
from rmqtool.errors import NotFound, RmqError
from rmqtool.io import geometry
from rmqtool.io.atomic import atomic_output
from rmqtool.io.jsonl import jsonl_bytes
from rmqtool.io.schema import MESSAGE_SCHEMA
from rmqtool.ops.log_rows import STORED, UNCOMPRESSED, Tally, log_rows
from rmqtool.report import ERROR, Finding
from rmqtool.structures.commitlog.selection import Selection

EXPORT_FORMATS = ("jsonl", "parquet")
_SUFFIX_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}


@dataclass
class ExportSummary:
    messages: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def corrupt_regions(self) -> int:
        return sum(f.severity == ERROR for f in self.findings)

    def to_json(self) -> dict:
        return {"messages": self.messages, "corruptRegions": self.corrupt_regions,
                "findings": [f.to_json() for f in self.findings]}


def export_format(out: str | Path | None, fmt: str | None) -> str:
    """The format asked for, else the one the output file's suffix names (JSONL for stdout or other names);
    a .csv name is refused: `import` would read it as CSV, which cannot hold an export."""
    if out is not None and Path(out).suffix.lower() == ".csv":  # import reads a .csv name as CSV, whatever it holds
        raise RmqError(f"{out}: an export cannot be CSV (binary bodies, a properties map) and import reads a .csv "
                       "name as CSV: name the file .jsonl or .parquet")
    if fmt is None:
        return _SUFFIX_FORMATS.get(Path(out).suffix.lower(), "jsonl") if out is not None else "jsonl"
    if fmt not in EXPORT_FORMATS:
        raise RmqError(f"unknown export format {fmt!r}: use {' or '.join(EXPORT_FORMATS)}")
    return fmt


def export_store(reader: StoreReader, out: str | Path | None, fmt: str | None = None, *,
                 decompress: bool = False, overwrite: bool = True, selection: Selection | None = None,
                 what: str = "export", from_offset: int = 0) -> ExportSummary:
    """Write every intact message of the store as JSONL (stdout when `out` is None) or Parquet.

    Bodies are kept as stored; with `decompress` compressed records are written as if their
    producer had not compressed them (plain body, codec bits cleared, bodyCRC and storeSize to match).
    Without `overwrite` an existing `out` is refused before the store is read. `out` appears whole or
    not at all (`io.atomic`; `what` names the command an interrupt stopped). `topic`, `begin` and
    `end` (store time, epoch ms, both included) export a subset through the same read path, `from_offset`
    the records from that commitlog offset on.
    """
    fmt = export_format(out, fmt)
    summary = ExportSummary()
    if fmt == "parquet" and out is None:
        raise RmqError("--format parquet needs --out FILE")
    facts = geometry.of_store(reader.config, None)
    tally = Tally()
    with _sink(out, fmt, overwrite, what, facts) as write:
        for item in log_rows(reader, render=_RENDERERS[fmt], bodies=UNCOMPRESSED if decompress else STORED,
                             selection=selection, from_offset=from_offset, tally=tally):
            if isinstance(item, Finding):
                summary.findings.append(item)
                continue
            rows, payload, host = item
            write(payload)
            summary.messages += rows
            facts[geometry.STORE_HOST] = host or facts.get(geometry.STORE_HOST)
        empty = tally.why_empty(reader, from_offset, selection) if selection is not None else None
        if empty is not None:  # raised inside the sink: no output file appears
            raise NotFound(empty)
    return summary


def _last_host(rows) -> str | None:
    return rows.column("storeHost")[-1].as_py() if rows.num_rows else None


# (rows, what the sink writes, the last row's storeHost) of a row batch, computed in the read path's workers
_RENDERERS = {"jsonl": lambda rows: (rows.num_rows, jsonl_bytes(rows, "base64"), _last_host(rows)),
              "parquet": lambda rows: (rows.num_rows, rows, _last_host(rows))}
_DICTIONARY_COLUMNS = ["topic", "bornHost", "storeHost", "compression"]  # the others rarely repeat


@contextlib.contextmanager
def _sink(out: str | Path | None, fmt: str, overwrite: bool, what: str, facts: dict):
    """A `write(rows)` callable for the output file (stdout when `out` is None); `facts`, the geometry as
    it is when the rows are written, goes into the file (Parquet) or beside it (JSONL, renamed into place
    just before the rows are)."""
    if out is None:
        yield sys.stdout.buffer.write
        return
    with atomic_output(out, overwrite, what) as tmp:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            with pq.ParquetWriter(tmp, MESSAGE_SCHEMA, use_dictionary=_DICTIONARY_COLUMNS) as writer:
                yield writer.write_batch
                writer.add_key_value_metadata({geometry.PARQUET_KEY: geometry.encode(facts)})
        else:
            with open(tmp, "wb") as f:
                yield f.write
            # the sidecar lands first (a stale one replaced), the rows after: no JSONL is without its geometry
            with atomic_output(geometry.sidecar(out), True, what) as side:
                side.write_bytes(geometry.encode(facts))

