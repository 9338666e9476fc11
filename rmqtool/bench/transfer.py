"""`rmqtool bench import`: how fast `import` loads a file into a fresh store, against `bench append`.

The input is made before the clock starts: producer rows (topic, binary body, tags, keys; the
rows `bench spark-load` loads) or an export of a generated store, as Parquet or JSONL. The
import runs in a fresh process so its peak RSS is its own; the clock covers what `rmqtool
import` does: read, check, plan, write, dispatch into consume queues and the index, close.
The same run measures `bench append --batch-size 256` with the same message count and body size,
and reports the ratio; and the ratio to the append with its close counted too, as the import's
clock counts its own (an import ends durable: its report is a resume point).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rmqtool.bench.append import run_append_bench
from rmqtool.bench.generate import generate_store
from rmqtool.bench.scan import throughput
from rmqtool.bench.sparkload import generate_rows
from rmqtool.engine.reader import open_reader
from rmqtool.errors import RmqError
from rmqtool.ops.export import EXPORT_FORMATS, export_store

ROWS = ("producer", "export")
APPEND_BATCH = 256
STAMP = 1_700_000_000_000

_CHILD = """
import json, sys, time
from rmqtool.bench.scan import peak_rss_bytes
from rmqtool.io.sources import Source
from rmqtool.load.records import LoadOptions
from rmqtool.load.writer import load
from rmqtool.engine.config import StoreConfig
source, warm, target = sys.argv[1:4]
load(target + "-warm", Source(warm), LoadOptions(StoreConfig(), STAMP))  # kernels loaded, as bench append warms up
t0 = time.perf_counter()
summary = load(target, Source(source), LoadOptions(StoreConfig(), STAMP))
elapsed = time.perf_counter() - t0
print(json.dumps({"messages": summary.messages, "bytes": summary.bytes, "seconds": elapsed,
                  "peak": peak_rss_bytes()}))
""".replace("STAMP", str(STAMP))


def _producer_jsonl(parquet: Path, out: Path) -> None:
    import pyarrow.parquet as pq

    with open(out, "w") as f:
        for batch in pq.ParquetFile(parquet).iter_batches(1 << 16):
            for row in batch.to_pylist():
                row["body"] = base64.b64encode(row["body"]).decode()
                f.write(json.dumps(row) + "\n")


def make_input(tmp: Path, rows: str, fmt: str, messages: int, body_size: int) -> Path:
    """The file the bench imports."""
    source = tmp / f"{rows}.{fmt}"
    if rows == "producer":
        generate_rows(tmp / "rows.parquet", messages, body_size)
        if fmt == "jsonl":
            _producer_jsonl(tmp / "rows.parquet", source)
        else:
            (tmp / "rows.parquet").rename(source)
        return source
    generate_store(tmp / "src", messages, body_size)
    export_store(open_reader(tmp / "src"), source, fmt)
    shutil.rmtree(tmp / "src")
    return source


def _import_once(source: Path, warm: Path, target: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(source), str(warm), str(target)], capture_output=True,
                         text=True)
    if out.returncode:
        raise RmqError(f"bench import failed: {out.stderr.strip().splitlines()[-1:]}")
    shutil.rmtree(target, ignore_errors=True)
    shutil.rmtree(f"{target}-warm", ignore_errors=True)
    return json.loads(out.stdout)


def run_import_bench(*, messages: int, body_size: int, fmt: str, rows: str = "producer", progress=None) -> dict:
    if fmt not in EXPORT_FORMATS:
        raise RmqError(f"--format must be one of {', '.join(EXPORT_FORMATS)}")
    if rows not in ROWS:
        raise RmqError(f"--rows must be one of {', '.join(ROWS)}")
    tmp = Path(tempfile.mkdtemp(prefix="rmqtool-bench-import-"))
    try:
        if progress:
            progress.print(f"making {messages} {rows} rows as {fmt} ...")
        source = make_input(tmp, rows, fmt, messages, body_size)
        (tmp / "warm").mkdir()
        warm = make_input(tmp / "warm", rows, fmt, 1000, body_size)
        doc = _import_once(source, warm, tmp / "store")
        append = run_append_bench(messages=messages, body_size=body_size, batch=APPEND_BATCH, flush="async")
        result = throughput(f"import-{rows}-{fmt}", doc["messages"], doc["bytes"], doc["seconds"], doc["peak"])
        result["appendBatchMessagesPerSecond"] = append["messagesPerSecond"]
        result["ratioToAppendBatch"] = round(result["messagesPerSecond"] / append["messagesPerSecond"], 2)
        closed = messages / (append["seconds"] + append["closeSeconds"])  # append made durable, as import ends
        result["ratioToAppendBatchClosed"] = round(result["messagesPerSecond"] / closed, 2)
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
