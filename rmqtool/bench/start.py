"""`bench start`: what a short command costs as a process, the way scripts call rmqtool (one lookup
per process): the interpreter, the imports, building the command and the answer; and the first `verify`
after an install (an empty kernel cache: a fresh NUMBA_CACHE_DIR) against a warm one. The ratios are
CPU medians: a short command's over `--version`'s, the first verify's over a warm verify's."""

from __future__ import annotations

import statistics
import tempfile
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
        "consumersJson": ["consumers", root, "--json"],
        "decodeJson": ["decode", "commitlog", root, "--count", "5", "--json"],
        "verifyJson": ["verify", root, "--json"],  # walks every record
    }


SHORT = ("queryJson", "queryCard", "infoJson", "consumersJson", "decodeJson")  # each a ratio to --version
FIRST_RUNS = 3  # first verifies, each with an empty kernel cache (a store past the interpreted budget compiles)


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
        walls: dict[str, list[float]] = {name: [] for name in [*commands, "verifyFirstRun"]}
        cpus: dict[str, list[float]] = {name: [] for name in walls}
        for k in range(runs):
            for name, args in commands.items():
                wall, cpu = run_rmqtool(args)
                walls[name].append(wall)
                cpus[name].append(cpu)
            if k < FIRST_RUNS:
                with tempfile.TemporaryDirectory(prefix="rmqtool-bench-kernels-") as cache:
                    wall, cpu = run_rmqtool(commands["verifyJson"], env={"NUMBA_CACHE_DIR": cache})
                walls["verifyFirstRun"].append(wall)
                cpus["verifyFirstRun"].append(cpu)
    doc: dict = {"mode": "start", "runs": runs}
    for name in walls:
        doc[name] = {"wallMsMin": round(min(walls[name]) * 1000, 1),
                     "wallMsMedian": round(statistics.median(walls[name]) * 1000, 1),
                     "cpuMsMedian": round(statistics.median(cpus[name]) * 1000, 1)}
    doc["cpuRatios"] = {**{f"{name}OverVersion": _ratio(doc[name], doc["version"]) for name in SHORT},
                        "verifyFirstRunOverWarm": _ratio(doc["verifyFirstRun"], doc["verifyJson"])}
    return doc


def _ratio(a: dict, b: dict) -> float:
    return round(a["cpuMsMedian"] / b["cpuMsMedian"], 2)
