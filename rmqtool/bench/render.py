"""`bench render`: the human table of `decode commitlog` against its `--jsonl` on the same store, in
the same run, each in a fresh process writing to /dev/null; CPU time is the fair measure on a busy
machine, wall time is reported beside it."""

from __future__ import annotations

from pathlib import Path

from rmqtool.bench.process import run_rmqtool
from rmqtool.bench.readpath import bench_store


def run_render_bench(store: Path | None, *, messages: int, body_size: int, repeat: int = 2,
                     config: Path | None = None, progress=None) -> dict:
    """Best of `repeat` runs of the table and of `--jsonl`; rows/s and the table's ratio to JSONL."""
    with bench_store(store, config, messages, body_size, progress) as reader:
        root = str(reader.paths.root)
        count = sum(len(c.batch) for c in reader.scan(verify_crc=False) if c.batch is not None)
        modes = (("table", []), ("jsonl", ["--jsonl"]))
        for _, extra in modes:  # untimed: the first run after an install compiles and caches the kernels
            run_rmqtool(["decode", "commitlog", root, *extra])
        best: dict[str, tuple[float, float]] = {}
        for _ in range(repeat):
            for mode, extra in modes:
                wall, cpu = run_rmqtool(["decode", "commitlog", root, *extra])
                if mode not in best or cpu < best[mode][1]:
                    best[mode] = (wall, cpu)
    doc: dict = {"mode": "render", "messages": count}
    for mode, (wall, cpu) in best.items():
        doc[mode] = {"seconds": round(wall, 3), "cpuSeconds": round(cpu, 3),
                     "messagesPerCpuSecond": round(count / cpu) if cpu else None}
    doc["tableToJsonlCpu"] = round(best["jsonl"][1] / best["table"][1], 3) if best["table"][1] else None
    doc["tableToJsonlWall"] = round(best["jsonl"][0] / best["table"][0], 3) if best["table"][0] else None
    return doc
