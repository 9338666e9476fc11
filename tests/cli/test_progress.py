"""Progress goes to stderr only when stderr is a terminal: a bar with bytes, rate and time left for
every command that walks the commitlog; nothing at all when stderr is a pipe."""

import os
import pty
import subprocess
import sys
import tempfile

import pytest
from cli_helpers import CONF, FIXTURE, RMQTOOL, read_terminal, run

from rmqtool.engine.reader import open_reader, scan_observed


def _stderr_on_a_terminal(*args: str, both: bool = False, env: dict | None = None) -> tuple[int, str, bytes]:
    """Run rmqtool with stderr on a terminal (`both`: stdout too); (exit code, what the terminal got, stdout)."""
    main, sub = pty.openpty()
    sink = tempfile.TemporaryFile()  # noqa: SIM115 - read after the process ends
    proc = subprocess.Popen([str(RMQTOOL), *args], stdout=sub if both else sink, stderr=sub,
                            env={**os.environ, "COLUMNS": "120", **(env or {})})
    os.close(sub)
    seen = read_terminal(main)
    proc.wait()
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
    assert "151.7/151.7 kB" in seen  # bytes done of bytes to scan: the log's data, 0 .. 151686
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


def test_the_scan_total_is_the_segment_files_size_rather_than_the_data():
    """Three 64 KiB segment files hold 151686 bytes of records: the bar counts those, not 196608."""
    told = []
    with scan_observed(lambda done, total: told.append((done, total))):
        for _ in open_reader(FIXTURE, CONF).scan():
            pass
    assert told[-1] == (151686, 151686)
    assert {total for _, total in told} == {151686} and all(0 <= done <= total for done, total in told)
    told.clear()
    with scan_observed(lambda done, total: told.append((done, total))):
        for _ in open_reader(FIXTURE, CONF).scan(65536 + 100, until=131072):
            pass
    assert told[-1] == (131072 - 65636, 131072 - 65636)  # a scan of part of the log counts that part


FAKE_PAGER = """
import sys, time
out = sys.stdout.buffer
out.write(b"<<pager starts>>\\r\\n"); out.flush()
time.sleep(1.5)  # the reader holds the output: the command blocks on the full pipe
sys.stdin.buffer.read()
out.write(b"<<pager ends>>\\r\\n"); out.flush()
"""


def test_the_bar_and_notes_are_drawn_over_the_pager(tmp_path):
    pager = tmp_path / "pager.py"
    pager.write_text(FAKE_PAGER)
    code, seen, _ = _stderr_on_a_terminal("decode", "commitlog", str(FIXTURE), both=True,
                                          env={"PAGER": f"{sys.executable} {pager}"})
    assert code == 0, seen
    _, rest = seen.split("<<pager starts>>")
    during, after = rest.split("<<pager ends>>")
    for drawn in ("━", "kB", "columns left out"):
        assert drawn not in during, f"{drawn!r} drawn while the pager runs"
    assert "columns left out at this width" in after  # the note comes when the pager has given the screen back
    assert "420 messages" in after


def test_report_shows_each_stage_it_has_read_on_a_terminal(tmp_path):
    page = tmp_path / "r.html"
    code, seen, out = _stderr_on_a_terminal("report", str(FIXTURE), "--config", str(CONF), "--out", str(page),
                                            "--verify")
    assert code == 0, seen
    for stage in ("info: 19 queues", "consumers", "index: 3 index files", "verify"):
        assert stage in seen, stage
    assert "151.7/151.7 kB" in seen  # --verify scans the log: the byte bar of every walk
    assert out == f"{page}: {page.stat().st_size} bytes\n".encode()


def test_report_in_a_pipe_shows_no_progress(tmp_path):
    out = run("report", FIXTURE, "--config", CONF, "--out", tmp_path / "r.html", "--verify")
    assert (out.returncode, out.stderr) == (0, "")
