"""`rmqtool bench export|verify|spark-export`: the read path's throughput as a ratio to the scan.

Each bench reads STORE (or a generated store with its queues and index rebuilt by recovery,
as a broker leaves them), first with `bench scan --mode full`'s pass, then with the command
under test, in the same process and run: the targets are ratios, and the machine is noisy.
export and verify then run as `rmqtool` processes too, as a user meets them (process start included).
A warm-up pass (imports, compiled kernels, a Spark session) runs before any clock.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rmqtool.bench.generate import generate_store
from rmqtool.bench.process import command_run
from rmqtool.bench.scan import peak_rss_bytes, reset_peak_rss, scan_once, throughput
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import StoreReader, open_reader
from rmqtool.errors import RmqError
from rmqtool.files.paths import StorePaths
from rmqtool.files.segments import data_end
from rmqtool.ops.export import export_store
from rmqtool.ops.recovery import apply_recovery, plan_recovery
from rmqtool.ops.verify import verify_store
from rmqtool.structures import checkpoint

EXPORT_FORMATS = ("parquet", "jsonl")


@contextmanager
def bench_store(store: Path | None, config: Path | None, messages: int, body_size: int,
                progress=None, *, queues: int = 8) -> Iterator[StoreReader]:
    """A reader of `store`, or of a generated store with consume queues and index (removed after), its
    messages spread over `queues` queues of one topic, written with `config`'s settings (its index
    geometry, say) when given."""
    if store is not None:
        yield open_reader(store, config)
        return
    tmp = Path(tempfile.mkdtemp(prefix="rmqtool-bench-read-"))
    try:
        if progress:
            progress.print(f"generating {messages} messages of {body_size} B (queues and index by recovery) ...")
        root = tmp / "store"
        indexed_store(root, messages, body_size, StoreConfig.from_file(config)[0] if config else None, queues=queues)
        yield open_reader(root, config)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def indexed_store(root: Path, messages: int, body_size: int, config: StoreConfig | None = None, *,
                  queues: int = 8) -> None:
    """A generated store (`queues` queues) whose consume queues and index the crash recovery rebuilt from the log."""
    cfg = config or StoreConfig()
    generate_store(root, messages, body_size, segment_size=cfg.mappedFileSizeCommitLog,
                   cq_file_size=cfg.mappedFileSizeConsumeQueue, config=cfg, queues=queues)
    paths = StorePaths(root)
    shutil.rmtree(paths.consumequeue)
    paths.checkpoint.write_bytes(checkpoint.encode(checkpoint.Checkpoint()))
    paths.abort.touch()
    apply_recovery(root, cfg, plan_recovery(root, cfg, count_dispatch=False))


def _best(run: Callable[[], int], repeat: int) -> tuple[float, int]:
    """(best seconds, messages) of `repeat` timed runs of `run`, which returns the messages it read."""
    best, count = None, 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        count = run()
        elapsed = time.perf_counter() - t0
        best = elapsed if best is None else min(best, elapsed)
    return best or 0.0, count


def _with_scan(reader: StoreReader, mode: str, run: Callable[[], int], repeat: int,
               command: list[str] | None = None, **extra) -> dict:
    """The bench object of `run`, with the full scan of the same store timed in the same run; given
    `command`, the same work as an `rmqtool` process too (`command`: its wall and CPU seconds, best of
    `repeat`, and peak RSS; `commandRatioToScan`: its messages/s, process start included, to the scan's)."""
    scan_seconds, _ = _best(lambda: scan_once(reader, "full")[0], repeat)
    run()  # warm-up: imports and compiled kernels outside the clock
    reset_peak_rss()
    seconds, count = _best(run, repeat)
    if count == 0:
        raise RmqError(f"{reader.paths.root}: no messages to read")
    nbytes = _data_bytes(reader)
    doc = throughput(mode, count, nbytes, seconds, peak_rss_bytes(), **extra)
    scan_rate = round(count / scan_seconds) if scan_seconds else 0
    doc = {**doc, "scanMessagesPerSecond": scan_rate,
           "ratioToScan": round(doc["messagesPerSecond"] / scan_rate, 3) if scan_rate else None}
    if command is not None:
        runs = [command_run(command) for _ in range(repeat)]
        wall = min(r.wall for r in runs)
        doc["command"] = {"args": command, "seconds": round(wall, 4), "cpuSeconds": round(min(r.cpu for r in runs), 4),
                          "peakRssBytes": max(r.peak_rss for r in runs)}
        doc["commandRatioToScan"] = round(count / wall / scan_rate, 3) if scan_rate and wall else None
    return doc


def run_export_bench(store: Path | None, *, fmt: str, messages: int, body_size: int, repeat: int = 2,
                     config: Path | None = None, progress=None) -> dict:
    """`export --format fmt` of the whole store against the scan."""
    if fmt not in EXPORT_FORMATS:
        raise RmqError(f"--format must be one of {', '.join(EXPORT_FORMATS)}, not {fmt!r}")
    out_dir = Path(tempfile.mkdtemp(prefix="rmqtool-bench-export-"))
    try:
        with bench_store(store, config, messages, body_size, progress) as reader:
            out = out_dir / f"export.{fmt}"
            command = ["export", str(reader.paths.root), "--out", str(out), "--force"] + \
                (["--config", str(config)] if config else [])
            return _with_scan(reader, f"export-{fmt}", lambda: export_store(reader, out, fmt).messages, repeat,
                              command)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def run_verify_bench(store: Path | None, *, messages: int, body_size: int, repeat: int = 2,
                     config: Path | None = None, progress=None) -> dict:
    """`verify` of the whole store against the scan."""
    problems = []

    def run() -> int:
        report = verify_store(reader)
        problems.append(report.problems)
        return report.messages

    with bench_store(store, config, messages, body_size, progress) as reader:
        command = ["verify", str(reader.paths.root), "--json"] + (["--config", str(config)] if config else [])
        doc = _with_scan(reader, "verify", run, repeat, command)
        files = len(reader.index_paths())
    return {**doc, "problems": problems[-1], "indexFiles": files}


_SPARK_CHILD = """
import json, sys, tempfile, time
from pathlib import Path
from rmqtool.bench.scan import peak_rss_bytes, reset_peak_rss
from rmqtool.spark.brokers import ExportStore
from rmqtool.spark.export import spark_export
from rmqtool.spark.session import get_session
from rmqtool.engine.reader import open_reader
master, out, *roots = sys.argv[1:]
stores = [ExportStore(Path(r), open_reader(r).config, f"broker-{k}") for k, r in enumerate(roots)]
get_session(master)
spark_export(stores, Path(out) / "warm", master=master)
reset_peak_rss()
t0 = time.perf_counter()
result = spark_export(stores, Path(out) / "run", master=master)
print(json.dumps({"messages": result.messages, "ranges": result.ranges, "seconds": time.perf_counter() - t0,
                  "peak": peak_rss_bytes()}))
"""


def run_spark_export_bench(store: Path | None, *, masters: list[str], messages: int, body_size: int, stores: int = 1,
                           config: Path | None = None, progress=None) -> dict:
    """spark-export (Parquet) of `stores` copies of the store, on each master, each in its own process after a
    warm-up export; the rates and their ratios to the first master and to the scan (of one copy)."""
    out_dir = Path(tempfile.mkdtemp(prefix="rmqtool-bench-spark-export-"))
    try:
        with bench_store(store, config, messages, body_size, progress) as reader:
            scan_seconds, count = _best(lambda: scan_once(reader, "full")[0], 2)
            nbytes = _data_bytes(reader) * stores
            roots = [str(reader.paths.root)]
            for k in range(1, stores):
                if progress:
                    progress.print(f"linking a copy of the store ({k} of {stores - 1}) ...")
                # hard links: the same files at another root (a copy would fill the segments' holes)
                roots.append(str(shutil.copytree(reader.paths.root, out_dir / f"store-{k}", copy_function=os.link)))
            runs = {}
            for master in masters:
                if progress:
                    progress.print(f"spark-export on {master} ...")
                target = out_dir / master.replace("[", "-").replace("]", "").replace("*", "all")
                target.mkdir()  # the child's exports (warm/, run/) are new folders inside it
                done = subprocess.run([sys.executable, "-c", _SPARK_CHILD, master, str(target), *roots],
                                      capture_output=True, text=True)
                if done.returncode:
                    raise RmqError(f"bench spark-export ({master}) failed: "
                                   f"{(done.stderr.strip().splitlines() or ['?'])[-1]}")
                doc = json.loads(done.stdout.strip().splitlines()[-1])
                runs[master] = throughput(f"spark-export-{master}", doc["messages"], nbytes, doc["seconds"],
                                          doc["peak"], ranges=doc["ranges"])
                shutil.rmtree(target, ignore_errors=True)
            first = runs[masters[0]]["messagesPerSecond"]
            return {"scan": {"messages": count, "messagesPerSecond": round(count / scan_seconds)}, "stores": stores,
                    "runs": runs, "ratioToFirstMaster": {m: round(r["messagesPerSecond"] / first, 3)
                                                         for m, r in runs.items()}}
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def _data_bytes(reader: StoreReader) -> int:
    """Bytes of the log's data (a preallocated segment's unwritten tail is not read)."""
    return sum(data_end(s.path) or s.size for s in reader.segments)
