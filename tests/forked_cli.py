"""`rmqtool ARGS` in a child forked from the test process: the same entry point as the console script
(`rmqtool.cli.app.main`), in a process of its own (its exit code, or -9 when it is SIGKILLed, its own stdout and
stderr), without the ~2 s a new interpreter spends importing pyarrow, pandas and numba. The tests that run a
command at every step of a repair, or on many random damages, run hundreds of commands; `cli_helpers.run` is the
console script itself, for everything else.

`frozen_lost_clock`: the child's clock for naming lost/ folders stands still at FROZEN_STAMP, so a step named
after the repair's lost/ folder (`swapped lost/<UTC time>`) can be named before the run starts.

Before its first fork the test process runs a repair itself (`_warm`): the compiled scan and dispatch kernels
are then loaded once, not from numba's cache by every child (about 1 s each).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import subprocess
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

from cli_helpers import RUN_GUARD_S

FROZEN = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
FROZEN_STAMP = "20300102T030405Z"  # lost/ folders a child with frozen_lost_clock makes are named so
_RUNS = itertools.count()
HOOKS_ENV = ("RMQTOOL_TEST_KILL_AT", "RMQTOOL_TEST_TRACE")  # rmqtool.ops.repair's KILL_AT_ENV and TRACE_ENV


def _child(argv: list[str], env: dict[str, str], out: str, err: str, frozen_lost_clock: bool) -> None:
    """The forked child: the console script's run of `argv` (a traceback for an uncaught exception, exit 1). The
    repair's interruption hooks are off unless `env` sets them."""
    for name in HOOKS_ENV:
        os.environ.pop(name, None)
    os.environ.update(env)
    stdout, stderr = open(out, "w", encoding="utf-8"), open(err, "w", encoding="utf-8")  # noqa: SIM115
    os.dup2(stdout.fileno(), 1)
    os.dup2(stderr.fileno(), 2)
    sys.stdout, sys.stderr = stdout, stderr
    if frozen_lost_clock:
        import rmqtool.files.lost as lost

        class Frozen(datetime):
            @classmethod
            def now(cls, tz=None):
                return FROZEN if tz is None else FROZEN.astimezone(tz)

        lost.datetime = Frozen
    code = 0
    try:
        from rmqtool.cli.app import main

        main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    stdout.flush()
    stderr.flush()
    os._exit(code)


_warmed = False


def _warm() -> None:
    """Load what every child would load for itself: the CLI, and the kernels a repair and a check compile."""
    global _warmed
    if _warmed:
        return
    import contextlib
    import io
    import shutil
    import tempfile

    from cli_helpers import CONF
    from damage import damaged_stores

    from rmqtool.cli.app import main

    where = Path(tempfile.mkdtemp(prefix="rmqtool-warm-"))
    try:
        store = damaged_stores(where, ["crc-mid"])["crc-mid"]
        for extra in (["--apply"], []):
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                    contextlib.suppress(SystemExit):
                main(["doctor", str(store), "--config", str(CONF), "--json", *extra])
    finally:
        shutil.rmtree(where, ignore_errors=True)
    _warmed = True


def forked_run(*args: object, env: dict[str, str] | None = None, frozen_lost_clock: bool = False,
               scratch: Path) -> subprocess.CompletedProcess:
    """Run `rmqtool ARGS` in a forked child with `env` added to its environment; its stdout and stderr go through
    two files in `scratch` (which must exist). Waits at most RUN_GUARD_S (a guard against a hang, never a speed
    limit)."""
    _warm()
    argv = [str(a) for a in args]
    n = next(_RUNS)
    out, err = scratch / f"forked-{n}.out", scratch / f"forked-{n}.err"
    sys.stdout.flush()
    sys.stderr.flush()
    proc = multiprocessing.get_context("fork").Process(
        target=_child, args=(argv, dict(env or {}), str(out), str(err), frozen_lost_clock), daemon=False)
    proc.start()
    proc.join(RUN_GUARD_S)
    if proc.exitcode is None:
        proc.kill()
        proc.join(RUN_GUARD_S)
        raise AssertionError(f"rmqtool {' '.join(argv)} did not end within {RUN_GUARD_S} s")
    return subprocess.CompletedProcess(["rmqtool", *argv], proc.exitcode, out.read_text(encoding="utf-8"),
                                       err.read_text(encoding="utf-8"))


def wait_for(condition, what: str, deadline_s: float = RUN_GUARD_S, pause_s: float = 0.002) -> None:
    """Poll `condition()` until it is true; fail naming `what` after `deadline_s`."""
    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {deadline_s} s")
        time.sleep(pause_s)
