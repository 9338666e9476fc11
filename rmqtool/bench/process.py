"""One `rmqtool` command in a fresh process, timed as a user meets it: wall and CPU seconds."""

from __future__ import annotations

import resource
import subprocess
import sys
import time

# a fixed width and no inherited settings: runs compare across shells and terminals
BENCH_ENV = {"COLUMNS": "160", "PATH": "/usr/bin:/bin"}


def run_rmqtool(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `rmqtool ARGS` process writing to /dev/null."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rmqtool", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True, env=BENCH_ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
