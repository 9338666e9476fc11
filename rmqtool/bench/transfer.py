"""`rmqtool bench import`: how fast an export is replayed into a fresh store.

A store of generated messages is exported (JSONL or Parquet) before the clock starts; the
clock covers what `rmqtool import` does: the check of every record, the writes, and the
dispatch into consume queues and the index.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rmqtool.bench.scan import throughput
from rmqtool.errors import RmqError
from rmqtool.ops.export import EXPORT_FORMATS, export_store
from rmqtool.store.reader import open_reader

FIXTURE = Path(__file__).resolve().parent.parent.parent / "fixtures" / "store"


_CHILD = """
import json, sys, time
from rmqtool.bench.scan import peak_rss_bytes
from rmqtool.io.sources import Source
from rmqtool.load.records import LoadOptions
from rmqtool.load.writer import load
from rmqtool.store.config import StoreConfig
source, target = sys.argv[1:3]
t0 = time.perf_counter()
summary = load(target, Source(source), LoadOptions(StoreConfig(), 0))
elapsed = time.perf_counter() - t0
print(json.dumps({"messages": summary.messages, "bytes": summary.bytes, "seconds": elapsed,
                  "peak": peak_rss_bytes()}))
"""


def run_import_bench(*, messages: int, body_size: int, fmt: str, progress=None) -> dict:
    """Generate and export outside the clock; import in a fresh process so its peak RSS is its own."""
    if fmt not in EXPORT_FORMATS:
        raise RmqError(f"--format must be one of {', '.join(EXPORT_FORMATS)}")
    from rmqtool.bench.generate import generate_store

    tmp = Path(tempfile.mkdtemp(prefix="rmqtool-bench-import-"))
    try:
        if progress:
            progress.print(f"generating and exporting {messages} messages ...")
        generate_store(tmp / "src", messages, body_size)
        source = tmp / f"export.{fmt}"
        export_store(open_reader(tmp / "src"), source, fmt)
        runs = [(source, tmp / "dst")]
        if FIXTURE.is_dir():  # compile or load the kernels before the measured run
            warm = tmp / f"warm.{fmt}"
            export_store(open_reader(FIXTURE), warm, fmt)
            runs.insert(0, (warm, tmp / "warm-store"))
        for src, dst in runs:
            out = subprocess.run([sys.executable, "-c", _CHILD, str(src), str(dst)], capture_output=True, text=True)
            if out.returncode:
                raise RmqError(f"bench import failed: {out.stderr.strip().splitlines()[-1:]}")
        doc = json.loads(out.stdout)
        return throughput(f"import-{fmt}", doc["messages"], doc["bytes"], doc["seconds"], doc["peak"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
