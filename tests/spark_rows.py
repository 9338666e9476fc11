"""Producer rows for the load paths (sequential import and spark-load) and the stores they write."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

from cli_helpers import CONF

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import open_reader
from rmqtool.io.sources import Source
from rmqtool.load.records import LoadOptions
from rmqtool.load.writer import load
from rmqtool.ops.export import export_store

STAMP = 1_700_000_000_000


def producer_rows(n: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        row = {"topic": rng.choice(["Orders", "Payments", "Audit"]),
               "body": base64.b64encode(rng.randbytes(rng.randint(0, 400))).decode()}
        if i % 3 == 0:
            row["tags"] = f"tag{i % 5}"
        if i % 4 == 0:
            row["keys"] = f"order-{i} customer-{i % 7}" if i % 8 else [f"order-{i}", "bulk"]
        if i % 10 == 0:
            row["queueId"] = i % 3
        if i % 17 == 0:
            row["properties"] = {"region": f"r{i % 4}"}
        if i % 29 == 0:
            row["bornHost"] = "[2001:db8::7]:5555"
        if i % 5 == 0:
            row["bornTimestamp"] = STAMP - i
        rows.append(row)
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def imported(tmp: Path, source: Path, cfg: StoreConfig, name: str = "imported") -> Path:
    store = tmp / name
    load(store, Source(source), LoadOptions(cfg, STAMP))
    return store


def files_of(store: Path, sub: str) -> dict[str, bytes]:
    base = store / sub
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def export_rows(store, out) -> list[dict]:
    """The rows `rmqtool export` writes for `store`, parsed."""
    summary = export_store(open_reader(store, CONF), out, "jsonl")
    assert not summary.findings
    return [json.loads(line) for line in out.read_text().splitlines()]
