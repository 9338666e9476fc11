"""One `rmqtool` command in a fresh process, timed as a user meets it: wall and CPU seconds, peak RSS."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass

# a fixed width and no inherited settings: runs compare across shells and terminals
BENCH_ENV = {"COLUMNS": "160", "PATH": "/usr/bin:/bin"}


@dataclass(frozen=True)
class CommandRun:
    wall: float  # seconds, process start included
    cpu: float  # user + system seconds of the process
    peak_rss: int  # bytes: its VmHWM, read every 10 ms while it runs


def command_run(args: list[str]) -> CommandRun:
    """One `rmqtool ARGS` process writing to /dev/null; a non-zero exit raises CalledProcessError."""
    env = dict(BENCH_ENV)
    if os.environ.get("PYTHONPATH"):  # the code this bench runs, not the installed copy
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rmqtool", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    peak = 0
    while True:  # its own ru_maxrss starts at this (large) process's RSS, taken over at exec: VmHWM is read
        peak = max(peak, _peak_rss_of(proc.pid))
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(_SAMPLE_S)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, proc.args)
    return CommandRun(wall, usage.ru_utime + usage.ru_stime, peak)


_SAMPLE_S = 0.01


def _peak_rss_of(pid: int) -> int:
    """VmHWM of a running process, in bytes (0 when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_rmqtool(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `rmqtool ARGS` process writing to /dev/null."""
    run = command_run(args)
    return run.wall, run.cpu
