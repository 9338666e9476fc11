"""`rmqtool bench import`: how fast an export is replayed into a fresh store.

A store of generated messages is exported (JSONL or Parquet) before the clock starts; the
clock covers what `rmqtool import` does: the check of every record, the writes, and the
dispatch into consume queues and the index.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from rmqtool.bench.scan import peak_rss_bytes, reset_peak_rss
from rmqtool.errors import RmqError
from rmqtool.store.config import StoreConfig
from rmqtool.store.message_store import MessageStore
from rmqtool.store.reader import open_reader
from rmqtool.store.transfer import EXPORT_FORMATS, check_import_file, export_store, import_file


def run_import_bench(*, messages: int, body_size: int, fmt: str, progress=None) -> dict:
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
        reset_peak_rss()
        t0 = time.perf_counter()
        cfg = StoreConfig()
        plan = check_import_file(source, cfg)
        with MessageStore(tmp / "dst", cfg) as store:
            summary = import_file(store, source, plan)
            store.dispatch()
            elapsed = time.perf_counter() - t0
        return {
            "mode": f"import-{fmt}" + ("" if plan.columnar else "-by-line"),
            "messages": summary.messages,
            "bytes": summary.bytes,
            "seconds": round(elapsed, 4),
            "messagesPerSecond": round(summary.messages / elapsed),
            "megabytesPerSecond": round(summary.bytes / elapsed / 1e6, 1),
            "peakRssBytes": peak_rss_bytes(),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
