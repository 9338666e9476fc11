"""A warm parent for the suite's `rmqtool` runs: started once per test process, it forks a child for each run.

A new interpreter spends 0.3-1 s importing numpy, pyarrow, typer and rich before a command reads a byte, and the
suite runs well over a thousand commands. This server is a fresh interpreter of its own (no pytest, no test's
monkeypatch, no thread) that imports those once; each request forks a child that takes the caller's working
folder, environment, stdin and output files and runs the console script's entry point (`rmqtool.cli.app.main`
with `sys.argv` as the script sets it) exactly as `rmqtool ARGS` does. pandas stays hidden, as every command
but Spark's hides it (those run as processes of their own); numba is not preloaded, so a child reads the
`NUMBA_*` variables it is given.

Protocol, one JSON line each way on stdin/stdout: a request {script, argv, env, cwd, stdin, out, err (paths),
frozenLostClock (the lost/ folder named FROZEN_STAMP: a repair killed at a step names its folder in advance)}, answered
by {"pid": N} when the child starts and {"code": C} when it ends (C as `subprocess` reports it: the exit status,
or minus the signal that ended it).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from datetime import datetime, timezone

FROZEN = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
FROZEN_STAMP = "20300102T030405Z"  # the lost/ folder a child with a frozen lost/ clock makes is named so


def _preload() -> None:
    from rmqtool.io.arrowstart import without_pandas

    without_pandas()
    import numba  # noqa: F401
    import numpy  # noqa: F401
    import pyarrow
    import pyarrow.compute  # noqa: F401
    import rich.console
    import rich.table  # noqa: F401

    import rmqtool.cli.app
    import rmqtool.engine.reader
    import rmqtool.io.jsonl
    import rmqtool.ops.log_rows  # noqa: F401


def _child(request: dict) -> None:
    """Become `rmqtool ARGV` as the console script runs it; never returns."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, path, mode in ((0, request["stdin"] or os.devnull, os.O_RDONLY),
                               (1, request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                               (2, request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            opened = os.open(path, mode, 0o644)
            os.dup2(opened, fd)
            os.close(opened)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 (a fresh reader: nothing the server read is buffered)
        sys.argv = [request["script"], *request["argv"]]
        sys.path[0] = os.path.dirname(request["script"])  # the script's folder, as for the console script, not tests/
        if request.get("frozenLostClock"):
            _freeze_lost_clock()
        from rmqtool.cli.app import main

        try:
            main()
            code = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:
                print(e.code, file=sys.stderr)
                code = 1
    except BaseException:  # as the interpreter does with an uncaught exception
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # the interpreter ignores a failing flush at exit too, but says so
                code = code or 120
        os._exit(code)


def _freeze_lost_clock() -> None:
    """The clock that names lost/ folders stands still at FROZEN (a killed repair's folder is known before it runs)."""
    import rmqtool.files.lost as lost

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return FROZEN if tz is None else FROZEN.astimezone(tz)

    lost.datetime = Frozen


def _read_line(fd: int, pending: bytearray) -> bytes | None:
    while b"\n" not in pending:
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        pending += chunk
    line, _, rest = bytes(pending).partition(b"\n")
    pending[:] = rest
    return line


def _reply(doc: dict) -> None:
    os.write(1, json.dumps(doc).encode() + b"\n")


def serve() -> None:
    _preload()
    sys.stdout.flush()
    sys.stderr.flush()
    pending = bytearray()
    while (line := _read_line(0, pending)) is not None:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        _reply({"pid": pid})
        _, status = os.waitpid(pid, 0)
        _reply({"code": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    serve()
