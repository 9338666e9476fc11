"""`rmqtool bench scan`: how fast a commitlog (or the consume queues) is read back."""

from __future__ import annotations

import resource
import shutil
import tempfile
import time
from pathlib import Path

from rmqtool.bench import layouts
from rmqtool.bench.generate import generate_store
from rmqtool.engine.reader import StoreReader, open_reader
from rmqtool.errors import RmqError
from rmqtool.structures import consumequeue

MODES = ("full", "headers", "consumequeue")
_HEADER_COLUMNS = ("totalSize", "queueId", "queueOffset", "storeTimestamp")


def reset_peak_rss() -> None:
    """Start a new peak-RSS measurement (Linux: VmHWM is reset by writing 5 to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss_bytes() -> int:
    """Peak resident set size since the last reset (or since the process started)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def throughput(mode: str, messages: int, nbytes: int, seconds: float, peak_rss: int, **extra) -> dict:
    """The bench JSON object every `rmqtool bench` mode reports."""
    return {"mode": mode, "messages": messages, "bytes": nbytes, "seconds": round(seconds, 4),
            "messagesPerSecond": round(messages / seconds), "megabytesPerSecond": round(nbytes / seconds / 1e6, 1),
            **extra, "peakRssBytes": peak_rss}


def scan_once(reader: StoreReader, mode: str) -> tuple[int, int, int]:
    """(messages, bytes, corrupt regions) of one pass in `mode`."""
    if mode == "consumequeue":
        return _scan_queues(reader)
    messages = nbytes = corrupt = 0
    full = mode == "full"
    for chunk in reader.scan(verify_crc=full):
        corrupt += len(chunk.findings)
        batch = chunk.batch
        if batch is None or not len(batch):
            continue
        batch.topics()
        for name in _HEADER_COLUMNS:
            batch.cols[name]
        if full:
            for name in batch.cols:
                batch.cols[name]
            batch.properties_array()
        messages += len(batch)
        nbytes += int(batch.cols["totalSize"].sum())
    return messages, nbytes, corrupt


def _scan_queues(reader: StoreReader) -> tuple[int, int, int]:
    """Every consume-queue entry through the queue reader (file or RocksDB form): (entries, bytes, 0)."""
    entries = 0
    for topic in reader.topics():
        for qid in reader.queue_ids(topic):
            for qoffs, _ in reader.consume_queue(topic, qid):
                entries += len(qoffs)
    return entries, entries * consumequeue.ENTRY_LEN, 0


def run_scan_bench(store: Path | None, *, messages: int, body_size: int, mode: str, repeat: int = 3,
                   config: Path | None = None, progress=None, layout: str = "plain") -> dict:
    """Scan `store` (or a generated one, in `layout`: see `bench.layouts`) `repeat` times; report the
    best pass."""
    tmp = None
    try:
        if store is None:
            tmp = Path(tempfile.mkdtemp(prefix="rmqtool-bench-"))
            if progress:
                progress.print(f"generating {messages} messages of {body_size} B ...")
            generate_store(tmp / "plain", messages, body_size)
            store = tmp / "plain"
            if layout != "plain":
                if progress:
                    progress.print(f"rewriting it as a {layout} store ...")
                store = tmp / layout
                if layout == "dledger":
                    store.mkdir()
                    layouts.to_dledger(tmp / "plain", store)
                else:
                    layouts.to_rocksdb(tmp / "plain", store)
                shutil.rmtree(tmp / "plain")
        reader = open_reader(store, config)
        reset_peak_rss()
        best = None
        for _ in range(repeat):
            t0 = time.perf_counter()
            count, nbytes, corrupt = scan_once(reader, mode)
            elapsed = time.perf_counter() - t0
            best = elapsed if best is None else min(best, elapsed)
        if count == 0:
            raise RmqError(f"{store}: nothing to scan")
        return throughput(mode, count, nbytes, best, peak_rss_bytes(), corruptRegions=corrupt,
                          layout=layout if tmp is not None else reader.queues.kind if mode == "consumequeue"
                          else "dledger" if reader.dledger else "plain")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
