"""`bench start`: what a short command costs as a process, the way scripts call rmqtool (one lookup
per process): the interpreter, the imports, building the command and the answer."""

from __future__ import annotations

import statistics
from pathlib import Path

from rmqtool.bench.process import run_rmqtool
from rmqtool.bench.readpath import bench_store


def start_commands(root: str, phy_offset: int) -> dict[str, list[str]]:
    """The short commands timed, by the name the report gives them."""
    return {
        "version": ["--version"],
        "queryJson": ["query", root, "--phy-offset", str(phy_offset), "--json"],
        "queryCard": ["query", root, "--phy-offset", str(phy_offset)],
        "infoJson": ["info", root, "--json"],
        "verifyJson": ["verify", root, "--json"],  # walks every record: the compiled walker's load is in it
    }


def run_start_bench(store: Path | None, *, runs: int = 20, messages: int = 1000, config: Path | None = None,
                    progress=None) -> dict:
    """Wall and CPU milliseconds (min and median of `runs` fresh processes) of each short command,
    the commands taking turns so that a busy moment of the machine is shared among them."""
    with bench_store(store, config, messages, 100, progress) as reader:
        root = str(reader.paths.root)
        first = next(c.batch for c in reader.scan(verify_crc=False) if c.batch is not None and len(c.batch))
        commands = start_commands(root, int(first.offsets[0]))
        for args in commands.values():  # untimed: compiled caches are made once after an install
            run_rmqtool(args)
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, args in commands.items():
                wall, cpu = run_rmqtool(args)
                walls[name].append(wall)
                cpus[name].append(cpu)
    doc: dict = {"mode": "start", "runs": runs}
    for name in commands:
        doc[name] = {"wallMsMin": round(min(walls[name]) * 1000, 1),
                     "wallMsMedian": round(statistics.median(walls[name]) * 1000, 1),
                     "cpuMsMedian": round(statistics.median(cpus[name]) * 1000, 1)}
    return doc
