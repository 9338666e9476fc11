"""One `rmqtool` command in a fresh process, timed as a user meets it: wall and CPU seconds, peak RSS."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

# a fixed width and no inherited settings: runs compare across shells and terminals
BENCH_ENV = {"COLUMNS": "160", "PATH": "/usr/bin:/bin"}


@dataclass(frozen=True)
class CommandRun:
    wall: float  # seconds, process start included
    cpu: float  # user + system seconds of the process
    peak_rss: int  # bytes: its VmHWM, read every 10 ms while it runs
    exit_code: int = 0
    stdout: str = ""  # with capture: what it printed (else nothing kept)
    stderr: str = ""


def command_run(args: list[str], *, check: bool = True, capture: bool = False,
                env: dict[str, str] | None = None) -> CommandRun:
    """One `rmqtool ARGS` process writing to /dev/null (with `capture`: to temporary files, kept in the
    result: no pipe to drain while it runs), `env` added to its environment; with `check`, a non-zero exit
    raises CalledProcessError."""
    if not capture:
        return _command_run(args, check, subprocess.DEVNULL, subprocess.DEVNULL, env)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        run = _command_run(args, check, out, err, env)
        out.seek(0)
        err.seek(0)
        return dataclasses.replace(run, stdout=out.read().decode(errors="replace"),
                                   stderr=err.read().decode(errors="replace"))


def _command_run(args: list[str], check: bool, stdout, stderr, extra: dict[str, str] | None) -> CommandRun:
    env = {**BENCH_ENV, **(extra or {})}
    if os.environ.get("PYTHONPATH"):  # the code this bench runs, not the installed copy
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rmqtool", *args], stdout=stdout, stderr=stderr, env=env)
    peak = 0
    while True:  # its own ru_maxrss starts at this (large) process's RSS, taken over at exec: VmHWM is read
        peak = max(peak, _peak_rss_of(proc.pid))
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(_SAMPLE_S)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if check and proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, proc.args)
    return CommandRun(wall, usage.ru_utime + usage.ru_stime, peak, proc.returncode)


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


def run_rmqtool(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `rmqtool ARGS` process writing to /dev/null."""
    run = command_run(args, env=env)
    return run.wall, run.cpu
