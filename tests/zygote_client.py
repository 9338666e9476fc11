"""The test process's side of `tests/zygote.py`: one zygote per test process, started on the first run."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import BinaryIO

_ZYGOTE = Path(__file__).with_name("zygote.py")
_lock = threading.Lock()
_server: tuple[int, subprocess.Popen] | None = None  # (this process's id, the zygote)
_stderr: dict[int, BinaryIO] = {}  # the zygote's stderr, by its pid
_pending = bytearray()


def _zygote() -> subprocess.Popen:
    global _server
    if _server is None or _server[0] != os.getpid() or _server[1].poll() is not None:
        err = tempfile.TemporaryFile()  # noqa: SIM115 - read when the zygote ends early
        proc = subprocess.Popen([sys.executable, str(_ZYGOTE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err, cwd=str(_ZYGOTE.parent), start_new_session=True)
        _stderr[proc.pid] = err
        _server = (os.getpid(), proc)
        _pending.clear()
    return _server[1]


def _answer(proc: subprocess.Popen, deadline: float) -> dict:
    fd = proc.stdout.fileno()
    while b"\n" not in _pending:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, 65536)
        if not chunk:
            proc.wait()
            raise RuntimeError(f"the test zygote ended (exit {proc.returncode}): {_said(proc)}")
        _pending.extend(chunk)
    line, _, rest = bytes(_pending).partition(b"\n")
    _pending[:] = rest
    return json.loads(line)


def _said(proc: subprocess.Popen) -> str:
    """The end of what the zygote wrote on stderr (why it could not start, say)."""
    err = _stderr[proc.pid]
    err.seek(0)
    return err.read().decode("utf-8", "replace")[-2000:]


def forked(script: str, argv: list[str], stdin: bytes | None, guard_s: float, *, env: dict[str, str],
           frozen_lost_clock: bool) -> subprocess.CompletedProcess:
    """`script ARGV` run by a child of the zygote in this process's folder and environment (`env` added);
    (stdout, stderr) bytes. A run past `guard_s` (a guard against a hang, never a speed limit) is killed and fails."""
    with _lock, tempfile.TemporaryDirectory(prefix="rmqtool-run-") as scratch:
        where = Path(scratch)
        if stdin is not None:
            (where / "in").write_bytes(stdin)
        request = {"script": script, "argv": argv, "env": {**os.environ, **env}, "cwd": os.getcwd(),
                   "frozenLostClock": frozen_lost_clock,
                   "stdin": str(where / "in") if stdin is not None else None,
                   "out": str(where / "out"), "err": str(where / "err")}
        proc = _zygote()
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        deadline = time.monotonic() + guard_s
        pid = _answer(proc, deadline)["pid"]
        try:
            code = _answer(proc, deadline)["code"]
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            _answer(proc, time.monotonic() + guard_s)
            raise AssertionError(f"rmqtool {' '.join(argv)} did not end within {guard_s} s") from None
        return subprocess.CompletedProcess([script, *argv], code, (where / "out").read_bytes(),
                                           (where / "err").read_bytes())
