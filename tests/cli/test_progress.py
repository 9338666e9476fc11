"""Progress goes to stderr only when stderr is a terminal: a bar with bytes, rate and time left for
every command that walks the commitlog; nothing at all when stderr is a pipe."""

import os
import pty
import subprocess
import tempfile

import pytest

from tests.cli_helpers import CONF, FIXTURE, RMQTOOL, run


def _stderr_on_a_terminal(*args: str) -> tuple[int, str, bytes]:
    main, sub = pty.openpty()
    sink = tempfile.TemporaryFile()  # noqa: SIM115 - read after the process ends
    proc = subprocess.Popen([str(RMQTOOL), *args], stdout=sink, stderr=sub, env={**os.environ, "COLUMNS": "120"})
    os.close(sub)
    seen = b""
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        seen += data
    proc.wait()
    os.close(main)
    sink.seek(0)
    out = sink.read()
    return proc.returncode, seen.decode("utf-8", "replace"), out


WALKS = [
    ["verify", str(FIXTURE), "--config", CONF],
    ["decode", "commitlog", str(FIXTURE), "--jsonl"],
    ["export", str(FIXTURE)],
    ["query", str(FIXTURE), "--config", CONF, "--topic", "OrderTopic", "--key", "order-3", "--scan", "--json"],
]


@pytest.mark.parametrize("args", WALKS, ids=lambda a: a[0])
def test_a_walk_of_the_store_draws_a_byte_progress_bar_on_a_terminal(args):
    code, seen, out = _stderr_on_a_terminal(*args)
    assert code == 0, seen
    assert "196.6/196.6 kB" in seen  # three 64 KiB segments: bytes done of bytes to scan
    assert b"kB" not in out and b"\x1b[" not in out  # stdout stays data only


@pytest.mark.parametrize("args", WALKS, ids=lambda a: a[0])
def test_no_progress_when_stderr_is_not_a_terminal(args):
    out = run(*args)
    assert out.returncode == 0 and "kB" not in out.stderr and "\x1b[" not in out.stderr


def test_a_command_that_walks_nothing_draws_no_empty_bar_on_a_terminal():
    """clean, info, decode msgid and the Spark drivers scan no segment here: an idle '0/? bytes' bar
    used to stand beside their output."""
    code, seen, out = _stderr_on_a_terminal("decode", "msgid", "C633640700002A9F0000000000000000")
    assert code == 0 and b"198.51.100.7:10911" in out
    assert "bytes" not in seen and "kB" not in seen and "━" not in seen
