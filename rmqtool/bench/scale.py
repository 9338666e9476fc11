"""`rmqtool bench scale`: the whole-store commands on a store of many GiB, each in a fresh process,
with wall time and peak RSS, then a crash and its recovery, then lookup latency.

The store is built through the load path in `chunks` loads, each with its own storeTimestamp (a
minute apart), so `--time` lookups have distinct times to find. Message N goes to topic
`ScaleT{N mod 4}`, queue `(N div 4) mod 8` at queue offset `N div 32`, with key `k{N}`: a lookup's
target and its expected answer follow from N without reading the store.
"""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from rmqtool.bench.recovery import percentiles
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.files.paths import StorePaths
from rmqtool.io.sources import TableSource
from rmqtool.load.records import LoadOptions
from rmqtool.load.writer import load

TOPICS, QUEUES = 4, 8
FIRST_STORE_TIME = 1_767_225_600_000  # 2026-01-01T00:00:00Z
CHUNK_GAP_MS = 60_000
GARBLED_TAIL = 4096  # the crash: this many bytes before the log's end overwritten
_ROWS = 1 << 16
_NAMES = ("topic", "queueId", "body", "tags", "keys", "bornTimestamp", "bornHost", "storeHost")
_RECORD_OVERHEAD = 240  # a record's bytes beyond its body with these rows (fixed part, topic, properties)


@dataclasses.dataclass
class ScaleStore:
    root: Path
    config: Path | None
    messages: int
    chunks: int
    data_bytes: int = 0  # where the commitlog ends

    def args(self) -> list[str]:
        return ["--config", str(self.config)] if self.config else []

    def chunk_time(self, chunk: int) -> int:
        return FIRST_STORE_TIME + chunk * CHUNK_GAP_MS


def _rows(first: int, count: int, body_size: int) -> Iterator:
    import pyarrow as pa

    names = np.array([f"ScaleT{t}" for t in range(TOPICS)], dtype=object)
    for a in range(first, first + count, _ROWS):
        n = min(_ROWS, first + count - a)
        idx = np.arange(a, a + n, dtype=np.int64)
        raw = np.full(n * body_size, ord("x"), dtype=np.uint8)
        offsets = np.arange(0, (n + 1) * body_size, body_size, dtype=np.int64)
        body = pa.LargeBinaryArray.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets),
                                                                        pa.py_buffer(raw)])
        yield pa.RecordBatch.from_pydict({
            "topic": pa.array(names[idx % TOPICS]), "queueId": pa.array((idx // TOPICS) % QUEUES),
            "body": body, "tags": pa.array(np.where(idx % 2 == 0, "tagA", "tagB")),
            "keys": pa.array([f"k{i}" for i in idx.tolist()]), "bornTimestamp": pa.array(FIRST_STORE_TIME + idx),
            "bornHost": pa.array(np.full(n, "10.0.0.1:40000")), "storeHost": pa.array(np.full(n, "10.0.0.2:10911"))})


def build(root: Path, config: Path | None, gib: float, body_size: int, chunks: int, progress=None) -> ScaleStore:
    """Load `gib` GiB of commitlog (to within a record) into a new store at `root` in `chunks` loads; the
    first load's bytes per message size the rest."""
    if root.exists():
        raise RmqError(f"{root} exists: bench scale builds a new store")
    cfg = StoreConfig.from_file(config)[0] if config else StoreConfig()
    target = int(gib * (1 << 30))
    store = ScaleStore(root, config, 0, chunks)
    per = max(target // (body_size + _RECORD_OVERHEAD) // chunks, 1)
    for c in range(chunks):
        summary = load(root, TableSource(_rows(store.messages, per, body_size), _NAMES),
                       LoadOptions(cfg, store.chunk_time(c)), register_topics=False)
        store.messages += per
        store.data_bytes = summary.end_offset
        if progress:
            progress(f"built {store.messages} messages, {summary.end_offset} bytes of {target}")
        if c + 1 < chunks:
            left = (target - summary.end_offset) * store.messages // summary.end_offset
            per = max(-(-left // (chunks - c - 1)), 1)
    return store


# A child's ru_maxrss keeps the high-water mark of the process it was forked from, so each command
# reports its own VmHWM (the peak of its own memory map) to a file as it exits.
_WITH_PEAK = """import atexit, runpy, sys
out = sys.argv[1]
def peak():
    with open("/proc/self/status") as f:
        hwm = [line.split()[1] for line in f if line.startswith("VmHWM:")]
    with open(out, "w") as f:
        f.write(hwm[0] if hwm else "0")
atexit.register(peak)
sys.argv = ["rmqtool", *sys.argv[2:]]
runpy.run_module("rmqtool", run_name="__main__", alter_sys=True)
"""


def run_process(args: list[str], *, keep_stdout: bool = False) -> dict:
    """One `rmqtool` process, output to /dev/null (or kept as `stdout`): wall seconds, exit code and
    peak RSS."""
    with tempfile.NamedTemporaryFile("r", suffix=".peak") as peak:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _WITH_PEAK, peak.name, *args], stderr=subprocess.DEVNULL,
                              stdout=subprocess.PIPE if keep_stdout else subprocess.DEVNULL, text=True)
        seconds = time.perf_counter() - start
        kib = peak.read().strip()
    out = {"seconds": round(seconds, 3), "exitCode": done.returncode, "peakRssBytes": int(kib or 0) * 1024}
    return {**out, "stdout": done.stdout} if keep_stdout else out


def _command(store: ScaleStore, name: str, args: list[str], *, keep_stdout: bool = False) -> dict:
    out = {"command": name, **run_process([*args, *store.args()], keep_stdout=keep_stdout)}
    out["messagesPerSecond"] = round(store.messages / out["seconds"]) if out["seconds"] else None
    return out


def whole_store_commands(store: ScaleStore, scratch: Path) -> list[dict]:
    """decode, verify, recover --dry-run and export on the intact store."""
    root = str(store.root)
    export = scratch / "scale-export.parquet"
    rows = [_command(store, "decode commitlog --jsonl", ["decode", "commitlog", root, "--jsonl"]),
            _command(store, "verify", ["verify", root]),
            _command(store, "recover --dry-run", ["recover", root, "--dry-run"]),
            _command(store, "export --out x.parquet", ["export", root, "--out", str(export)])]
    export.unlink(missing_ok=True)
    return rows


def crash(store: ScaleStore) -> None:
    """`abort` left behind and the last GARBLED_TAIL bytes before the end of the log garbled."""
    reader = StoreReader(store.root, StoreConfig.from_file(store.config)[0] if store.config else StoreConfig())
    seg = reader.segment_for(store.data_bytes - 1) if store.data_bytes else None
    if seg is None:
        raise RmqError("bench scale: the log holds no record to garble")
    end = store.data_bytes - seg.start
    rng = np.random.default_rng(1)
    with open(seg.path, "r+b") as f:
        f.seek(max(end - GARBLED_TAIL, 0))
        f.write(rng.integers(1, 256, min(GARBLED_TAIL, end), dtype=np.uint8).tobytes())
    StorePaths(store.root).abort.touch()


def crash_commands(store: ScaleStore) -> list[dict]:
    """A crash, its recovery, verify after it, and the thorough recovery that rebuilds the index."""
    root = str(store.root)
    crash(store)
    dry = _command(store, "crash: recover --dry-run", ["recover", root, "--dry-run", "--json"], keep_stdout=True)
    plan = json.loads(dry.pop("stdout") or "{}")
    return [dry,
            {**_command(store, "crash: recover", ["recover", root]), "messagesLost": plan.get("messagesLost"),
             "indexFilesDropped": plan.get("indexFilesDropped")},
            _command(store, "verify after recover", ["verify", root]),
            _command(store, "recover --thorough", ["recover", root, "--thorough"]),
            _command(store, "verify after --thorough", ["verify", root])]


def lookups(store: ScaleStore, samples: int, seed: int = 7) -> tuple[list[dict], int]:
    """Each lookup kind in its own process for `samples` random messages: p50/p99 wall ms, and how
    many answers were not the message asked for."""
    root = str(store.root)
    rng = random.Random(seed)
    times: dict[str, list[float]] = {"--queue-offset": [], "--msg-id": [], "--key": [], "--time": []}
    wrong = 0
    first, last = store.chunk_time(0), store.chunk_time(store.chunks - 1)
    for n in (rng.randrange(store.messages) for _ in range(samples)):
        topic, queue = f"ScaleT{n % TOPICS}", (n // TOPICS) % QUEUES
        got = _query(root, store, times["--queue-offset"], "--topic", topic, "--queue", str(queue),
                     "--queue-offset", str(n // 32))
        if got is None or got["properties"].get("KEYS") != f"k{n}":
            wrong += 1
            continue
        by_id = _query(root, store, times["--msg-id"], "--msg-id", got["msgId"])
        by_key = _query(root, store, times["--key"], "--topic", topic, "--key", f"k{n}")
        wrong += sum(m is None or m["commitLogOffset"] != got["commitLogOffset"] for m in (by_id, by_key))
        _query(root, store, times["--time"], "--topic", topic, "--queue", "0", "--time",
               str(rng.randrange(first - 30_000, last + 30_000)))
    return [{"lookup": kind, **percentiles(s)} for kind, s in times.items() if s], wrong


def _query(root: str, store: ScaleStore, times: list[float], *args: str) -> dict | None:
    """One `query` process; its wall time goes to `times`, its first message is returned."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "rmqtool", "query", root, *args, "--jsonl", "--body", "none",
                          *store.args()], capture_output=True, text=True)
    times.append(time.perf_counter() - start)
    line = out.stdout.splitlines()[0] if out.returncode == 0 and out.stdout else ""
    return json.loads(line) if line else None


def run_scale_bench(root: Path, *, gib: float, body_size: int, chunks: int, config: Path | None,
                    samples: int, progress=None) -> dict:
    """Build the store at `root`, run every whole-store command, crash and recover it, time lookups."""
    start = time.perf_counter()
    store = build(root, config, gib, body_size, chunks, progress)
    built = time.perf_counter() - start
    doc = {"mode": "scale", "store": str(root), "messages": store.messages, "bodySize": body_size,
           "commitlogBytes": store.data_bytes, "segments": len(list(StorePaths(root).commitlog.iterdir())),
           "indexFiles": len(list(StorePaths(root).index.iterdir())), "buildSeconds": round(built, 1)}
    if progress:
        progress("whole-store commands")
    doc["commands"] = whole_store_commands(store, root.parent)
    if progress:
        progress("lookups")
    doc["lookups"], doc["lookupsWrong"] = lookups(store, samples)
    if progress:
        progress("crash and recovery")
    doc["commands"] += crash_commands(store)
    doc["peakRssBytes"] = max(c["peakRssBytes"] for c in doc["commands"])
    return doc
