"""Running the installed `rmqtool` as a user does, and the fixture store it is run on."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

RMQTOOL = str(Path(sys.executable).with_name("rmqtool"))
ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "store"
CONF = ROOT / "fixtures" / "broker.conf"


RUN_GUARD_S = 900  # a last guard against a hung command, never a speed limit: a busy 2-core machine is slow


REAL_PROCESSES = "RMQTOOL_TEST_REAL_PROCESSES"  # set to 1: every run is a new interpreter, as without the zygote
_OWN_PROCESS_PREFIX = "spark-"  # Spark's commands keep pandas and start a JVM: a new interpreter each


def run(*args: object, stdin: str | None = None, text: bool = True, env: dict[str, str] | None = None,
        frozen_lost_clock: bool = False) -> subprocess.CompletedProcess:
    """`rmqtool ARGS` as the console script runs it, with `env` added to the environment: a child of the warm
    zygote (`tests/zygote.py`), or a new interpreter for Spark's commands and when REAL_PROCESSES is set. With
    `frozen_lost_clock` the lost/ folder a repair makes is named zygote.FROZEN_STAMP (a zygote child only)."""
    import os

    argv = [str(a) for a in args]
    if not frozen_lost_clock and (os.environ.get(REAL_PROCESSES) == "1"
                                  or any(a.startswith(_OWN_PROCESS_PREFIX) for a in argv[:2])):
        return subprocess.run([RMQTOOL, *argv], capture_output=True, text=text, timeout=RUN_GUARD_S, input=stdin,
                              env={**os.environ, **env} if env else None)
    from zygote_client import forked

    done = forked(RMQTOOL, argv, stdin.encode() if isinstance(stdin, str) else stdin, RUN_GUARD_S,
                  env=env or {}, frozen_lost_clock=frozen_lost_clock)
    if not text:
        return done
    return subprocess.CompletedProcess(done.args, done.returncode, _text(done.stdout), _text(done.stderr))


def _text(data: bytes) -> str:
    """Output bytes as `subprocess.run(text=True)` reads them (the locale's encoding, universal newlines)."""
    import io

    return io.TextIOWrapper(io.BytesIO(data)).read()


# config/consumerOffset.json of golden/basic with two groups: billing one queue past its max and on a topic gone,
# audit behind on both of its queues
CONSUMER_OFFSETS = ('{\n\t"offsetTable":{\n\t\t"OrderTopic@billing":{0:250,1:66,2:10,3:80\n\t\t},'
                    '\n\t\t"GoneTopic@billing":{0:5\n\t\t},\n\t\t"PaymentTopic@audit":{0:135,1:0\n\t\t}\n\t}\n}')


def consumer_store(golden_basic: Path, dst: Path) -> Path:
    """A writable copy of golden/basic's store at `dst` with CONSUMER_OFFSETS committed."""
    store = writable_copy(golden_basic / "store", dst)
    (store / "config" / "consumerOffset.json").write_text(CONSUMER_OFFSETS)
    return store


def fixture_copy(tmp_path: Path) -> Path:
    """A writable copy of the fixture store under `tmp_path`."""
    return writable_copy(FIXTURE, tmp_path / "store")


def tree_digest(store: Path) -> dict[str, str]:
    """The sha256 of every file of a store (its lock aside), by path: equal before and after means unchanged."""
    import hashlib

    return {str(p.relative_to(store)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(store.rglob("*")) if p.is_file() and p.name != "lock"}


def writable_copy(src: Path, dst: Path) -> Path:
    """A copy of the store `src` (a read-only golden one too) at `dst` that tests may write to."""
    shutil.copytree(src, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def on_a_terminal(*args: str, columns: int = 80, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run rmqtool with stdout on a terminal `columns` wide (no pager; COLUMNS unset: the width is the
    terminal's own), stderr to a pipe; stdout is what the terminal showed."""
    import fcntl
    import os
    import pty
    import struct
    import tempfile
    import termios

    main, sub = pty.openpty()
    fcntl.ioctl(sub, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    child_env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    err = tempfile.TemporaryFile()  # noqa: SIM115 - read after the process ends
    proc = subprocess.Popen([RMQTOOL, *map(str, args)], stdout=sub, stderr=err,
                            env={**child_env, "PAGER": "", "TERM": "dumb", "NO_COLOR": "1", **(env or {})})
    os.close(sub)
    seen = read_terminal(main)
    proc.wait(timeout=RUN_GUARD_S)
    err.seek(0)
    return subprocess.CompletedProcess(args, proc.returncode, seen.decode("utf-8", "replace").replace("\r\n", "\n"),
                                       err.read().decode("utf-8", "replace"))


def read_terminal(main: int) -> bytes:
    """All a pseudo-terminal's far end was given, until its last writer closed it (then closes `main`)."""
    import os

    seen = b""
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the last writer closed the terminal
            break
        if not data:
            break
        seen += data
    os.close(main)
    return seen


def table_rows(stdout: str) -> tuple[list[str], list[list[str]]]:
    """(header cells, row cells) of a streaming table (the first in `stdout`), cut where its rule line says the
    columns are."""
    from rich.cells import cell_len

    lines = stdout.splitlines()
    rule = lines.index(next(line for line in lines if line.startswith("─")))
    spans, at = [], 0
    for part in lines[rule].split("  "):
        spans.append((at, at + len(part)))
        at += len(part) + 2
    spans[-1] = (spans[-1][0], 1 << 30)  # the last cell runs to the end of its line

    def cells(line: str) -> list[str]:
        out, col = [""] * len(spans), 0
        for ch in line:
            k = next(i for i, (a, b) in enumerate(spans) if col < b)
            out[k] += ch
            col += cell_len(ch)
        return [c.strip() for c in out]

    return cells(lines[rule - 1]), [cells(line) for line in lines[rule + 1 :]]


_PROBE = (
    "import json, sys\n"
    "from rmqtool.cli import app\n"
    "built = []\n"
    "real = app.typer.main.get_command\n"
    "app.typer.main.get_command = lambda a: built.append(sorted(c.name for c in a.registered_commands)) or real(a)\n"
    "sys.argv[0] = 'rmqtool'\n"
    "try:\n"
    "    app.main()\n"
    "except SystemExit as e:\n"
    "    code = e.code\n"
    "sys.stderr.write(json.dumps({'code': code, 'built': built, 'modules': sorted(sys.modules), "
    "'pandasHidden': any(type(f).__name__ == '_HidePandas' for f in sys.meta_path)}) + '\\n')\n"
)


def command_probe(*args: object) -> dict:
    """`rmqtool ARGS` in a fresh interpreter, as the console script runs it: its exit `code`, the command trees it
    `built` (each the sorted names of its top-level commands), every module it loaded (`modules`) and whether
    pandas was hidden from it (`pandasHidden`)."""
    out = subprocess.run([sys.executable, "-c", _PROBE, *map(str, args)], capture_output=True, text=True,
                         timeout=RUN_GUARD_S)
    return json.loads(out.stderr.strip().splitlines()[-1])


def wait_for(condition, what: str, deadline_s: float = RUN_GUARD_S, pause_s: float = 0.002) -> None:
    """Poll `condition()` until it is true; fail naming `what` after `deadline_s`."""
    import time

    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {deadline_s} s")
        time.sleep(pause_s)
