"""A reading command stopped from outside ends cleanly: a pager quit early or a closed pipe is exit 0 and
nothing on stderr, Ctrl-C is exit 130 (SIGTERM 143) and one line on stderr; never a traceback."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_helpers import FIXTURE, RMQTOOL, RUN_GUARD_S

from rmqtool.bench.generate import BENCH_TOPIC, generate_store

MESSAGES = 200_000  # megabytes of table or JSON lines: still being written when the reader stops
WIDE = {"COLUMNS": "300"}  # every column fits: no "columns left out" note on stderr


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    return generate_store(tmp_path_factory.mktemp("big") / "store", MESSAGES, 20, segment_size=1 << 24).root


def commands(store: Path) -> dict[str, list[str]]:
    key = ["query", str(store), "--topic", BENCH_TOPIC, "--key", "bench-key"]
    return {
        "decode-table": ["decode", "commitlog", str(store)],
        "decode-jsonl": ["decode", "commitlog", str(store), "--jsonl"],
        "export": ["export", str(store)],
        "query-table": [*key, "--max", "2000"],  # 300 kB of table
        "verify": ["verify", str(store)],
        "consumequeue-table": ["decode", "consumequeue", str(store), "--topic", BENCH_TOPIC, "--queue", "0"],
    }


def _on_a_terminal(args: list[str], env: dict[str, str], stdout: bool = True, stderr: bool = False,
                   seen: list[bytes] | None = None) -> subprocess.Popen:
    """`rmqtool ARGS` with stdout and/or stderr on one pseudo-terminal (drained into `seen`), the others on
    pipes, in a process group of its own (its pager too), as a shell runs it."""
    sub = _terminal(seen)
    proc = subprocess.Popen([RMQTOOL, *args], stdout=sub if stdout else subprocess.PIPE,
                            stderr=sub if stderr else subprocess.PIPE, env={**os.environ, **env}, process_group=0)
    os.close(sub)
    return proc


def _terminal(seen: list[bytes] | None = None) -> int:
    """A pseudo-terminal's far end, for a child to write to (close it once the child has it); what is
    written is drained in a thread into `seen` until the last writer closes it."""
    main, sub = pty.openpty()

    def drain() -> None:
        try:
            while data := os.read(main, 65536):
                if seen is not None:
                    seen.append(data)
        except OSError:  # the terminal's last writer closed it
            pass
        os.close(main)

    threading.Thread(target=drain, daemon=True).start()
    return sub


@pytest.mark.parametrize(("name", "before"), [("decode-table", ""), ("query-table", ""),
                                              ("consumequeue-table", f"{BENCH_TOPIC}/0\n")])
def test_quitting_the_pager_early_prints_no_traceback(big, name, before):
    """`q` in less before the table's end: the next write found the pager gone, the table's summary then
    read a row count never set (UnboundLocalError, 30 lines of traceback, exit 1). `before`: what the
    command wrote to stderr before its table (the queue's name)."""
    proc = _on_a_terminal(commands(big)[name], {**WIDE, "PAGER": "head -c 100"})
    _, err = proc.communicate(timeout=RUN_GUARD_S)
    assert (proc.returncode, err.decode()) == (0, before)


def test_quitting_the_pager_early_on_a_terminal_exits_0(big):
    """stdout and stderr on one terminal, as a person runs it: the progress bar on stderr had swapped
    sys.stdout for its own while typer marked the broken pipe on it, so the exit was 1 (damage found)."""
    seen: list[bytes] = []
    proc = _on_a_terminal(commands(big)["decode-table"], {**WIDE, "PAGER": "head -c 100"}, stderr=True, seen=seen)
    assert proc.wait(timeout=RUN_GUARD_S) == 0
    assert b"Traceback" not in b"".join(seen)


@pytest.mark.parametrize("name", ["decode-table", "decode-jsonl", "export", "query-table"])
def test_a_pipe_closed_early_with_stderr_on_a_terminal_exits_0(big, name):
    """`rmqtool ... | head -1` in a terminal: the progress bar's console took the rows meant for the pipe
    (a table scrolled past on the terminal while `head` waited for its line), and JSON lines ended in exit 1."""
    proc = _on_a_terminal(commands(big)[name], WIDE, stdout=False, stderr=True)
    try:
        assert select.select([proc.stdout], [], [], 60)[0], "no line reached the pipe"
        assert proc.stdout.readline()
        proc.stdout.close()  # `head -1` is done
        assert proc.wait(timeout=RUN_GUARD_S) == 0
    finally:
        proc.kill()
        proc.wait()


def test_a_table_redirected_to_a_file_with_stderr_on_a_terminal_is_in_the_file(tmp_path):
    """`rmqtool decode commitlog STORE > rows.txt` in a terminal wrote the table to the terminal."""
    out = tmp_path / "rows.txt"
    sub = _terminal()
    with out.open("wb") as f:
        proc = subprocess.Popen([RMQTOOL, "decode", "commitlog", str(FIXTURE)], stdout=f, stderr=sub,
                                env={**os.environ, **WIDE})
    os.close(sub)
    assert proc.wait(timeout=RUN_GUARD_S) == 0
    lines = out.read_text().splitlines()
    assert lines[0].startswith("phyOffset   size  topic") and len(lines) == 2 + 420  # header, rule, 420 messages


@pytest.mark.parametrize("name", ["decode-table", "decode-jsonl", "export", "query-table", "verify"])
def test_an_interrupted_command_says_it_was_interrupted(big, name):
    """Ctrl-C after the first line (verify: once it reads the commitlog) ended with exit 130 and nothing
    on stderr: a script's log could not tell an interrupt from a crash."""
    proc = subprocess.Popen([RMQTOOL, *commands(big)[name]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **WIDE})
    if name == "verify":  # it prints at the end only: wait until it maps a segment
        _wait_for(lambda: "/commitlog/" in Path(f"/proc/{proc.pid}/maps").read_text(), proc)
    else:
        assert proc.stdout.readline()  # the rest waits in a full pipe: the command is still writing
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=RUN_GUARD_S)
    assert (proc.returncode, err.decode()) == (130, "rmqtool: interrupted\n")


PAGER = """import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)  # as less does: Ctrl-C is its own business
sys.stdin.buffer.read(100)
open(sys.argv[1] + "/paging", "w").close()
while sys.stdin.buffer.read(65536):
    pass
open(sys.argv[1] + "/read-all", "w").close()
while not os.path.exists(sys.argv[1] + "/quit"):
    time.sleep(0.01)
open(sys.argv[1] + "/quit-done", "w").close()
"""


def test_an_interrupt_while_paging_leaves_no_pager_running_behind(big, tmp_path):
    """Ctrl-C reaches the command and its pager (less ignores it): the command must end only after its
    pager has, however often Ctrl-C is pressed, else the shell and the pager both read the terminal."""
    (tmp_path / "pager.py").write_text(PAGER)
    pager = f"{sys.executable} {tmp_path / 'pager.py'} {tmp_path}"
    proc = _on_a_terminal(commands(big)["decode-table"], {**WIDE, "PAGER": pager})
    try:
        _wait_for(lambda: (tmp_path / "paging").exists(), proc)
        os.killpg(proc.pid, signal.SIGINT)
        _wait_for(lambda: (tmp_path / "read-all").exists(), proc)  # the command stopped and closed the pipe
        os.killpg(proc.pid, signal.SIGINT)  # pressed again while the pager runs
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1)
    finally:
        (tmp_path / "quit").touch()  # `q` in the pager (it ends whatever the command did)
    _, err = proc.communicate(timeout=RUN_GUARD_S)
    assert (tmp_path / "quit-done").exists()
    assert (proc.returncode, err.decode()) == (130, "rmqtool: interrupted\n")


def _wait_for(condition, proc: subprocess.Popen, timeout: float = 60) -> None:
    """Until `condition()` holds, while `proc` runs (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, proc.communicate()
        if condition():
            return
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _ctrl_c_as_in_a_terminal() -> None:
    """A command a terminal runs gets SIGINT at its default; a test runner started in the background (`cmd &`
    without job control) hands its children SIGINT ignored, which a loading rmqtool rightly keeps ignoring."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("delay", [0, 0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.05, 0.1])
def test_a_signal_while_the_modules_load_is_its_exit_code_not_a_keyboardinterrupt_traceback(delay, sig):
    """The signal is sent once rmqtool's own code runs (Python's import-time log names the package `rmqtool`
    done, whose first lines install the handlers: what comes before is the interpreter's start, site and the
    console script's `import re`, no code of ours), at early moments of the load of typer, numpy and the rest."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    proc = subprocess.Popen([RMQTOOL, "info", str(FIXTURE)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env, preexec_fn=_ctrl_c_as_in_a_terminal)
    try:
        for line in proc.stderr:
            if line.rpartition("|")[2].strip() == "rmqtool":
                break
        time.sleep(delay)  # a moment of the load, not a pass criterion: every moment must pass
        proc.send_signal(sig)
        rest = proc.stderr.read()
        assert proc.wait(timeout=RUN_GUARD_S) == 128 + sig, rest[-2000:]
    finally:
        proc.kill()
    assert "Traceback" not in rest and "KeyboardInterrupt" not in rest
    assert rest.splitlines()[-1] == ("rmqtool: terminated" if sig == signal.SIGTERM else "rmqtool: interrupted")
