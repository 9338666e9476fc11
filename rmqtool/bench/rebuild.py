"""`bench rebuild`: `rebuild --apply` against `recover --thorough` on the same store with its consume queues and
index deleted, each in a fresh process, in the same run (the target is a ratio: the rebuild at least as fast as
the thorough recovery's re-dispatch)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from rmqtool.bench.process import run_rmqtool
from rmqtool.bench.readpath import bench_store
from rmqtool.files.paths import StorePaths


def run_rebuild_bench(store: Path | None, *, messages: int, body_size: int, repeat: int = 2,
                      config: Path | None = None, progress=None) -> dict:
    """Best of `repeat` runs of each on a copy of STORE (or a generated store): seconds and MB/s of log."""
    tmp = Path(tempfile.mkdtemp(prefix="rmqtool-bench-rebuild-"))
    try:
        with bench_store(store, config, messages, body_size, progress) as reader:
            source = reader.paths.root
            count = log_bytes = 0
            for chunk in reader.scan(verify_crc=False):
                if chunk.batch is not None and len(chunk.batch):
                    count += len(chunk.batch)
                    last = chunk.batch
                    log_bytes = int(last.offsets[-1] + last.cols["totalSize"][-1]) - reader.segments[0].start
            extra = ["--config", str(config)] if config else []
            modes = {"rebuild": ["rebuild", "{store}", "--apply", *extra],
                     "recoverThorough": ["recover", "{store}", "--thorough", *extra]}
            best: dict[str, tuple[float, float]] = {}
            for _ in range(repeat):
                for mode, args in modes.items():
                    copy = tmp / mode
                    shutil.rmtree(copy, ignore_errors=True)
                    _copy(source, copy)
                    paths = StorePaths(copy)
                    shutil.rmtree(paths.consumequeue, ignore_errors=True)
                    shutil.rmtree(paths.index, ignore_errors=True)
                    wall, cpu = run_rmqtool([a.replace("{store}", str(copy)) for a in args])
                    if mode not in best or wall < best[mode][0]:
                        best[mode] = (wall, cpu)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    doc: dict = {"mode": "rebuild", "messages": count, "bytes": log_bytes}
    for mode, (wall, cpu) in best.items():
        doc[mode] = {"seconds": round(wall, 3), "cpuSeconds": round(cpu, 3),
                     "megabytesPerSecond": round(log_bytes / wall / 1e6, 1) if wall else None}
    doc["rebuildToRecoverThorough"] = round(best["recoverThorough"][0] / best["rebuild"][0], 3) \
        if best["rebuild"][0] else None
    return doc


def _copy(source: Path, target: Path) -> None:
    """A copy of a store that keeps its segments sparse (GNU cp), or a plain one."""
    if shutil.which("cp") and subprocess.run(["cp", "-a", "--sparse=always", str(source), str(target)],
                                             capture_output=True).returncode == 0:
        return
    shutil.copytree(source, target)
