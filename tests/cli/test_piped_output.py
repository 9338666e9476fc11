"""Output to a pipe or a file is never wrapped, on stdout and on stderr alike: a warning is one line, a table
is as wide as its cells need (a terminal gets its own width)."""

from __future__ import annotations

import os

from cli_helpers import CONF, fixture_copy, run
from lockholder import lock_held_elsewhere

DEEP = "a-folder-name-long-enough-to-push-the-store-path-past-any-screen-width-by-itself/" * 3


def _deep_store(tmp_path):
    """A writable fixture copy at a path of more than 250 characters."""
    deep = tmp_path / DEEP
    deep.mkdir(parents=True)
    store = fixture_copy(deep)
    assert len(str(store)) > 250
    return store


def test_a_warning_on_stderr_is_wrapped_at_80_columns_in_a_pipe(tmp_path):
    store = fixture_copy(tmp_path)
    (store / "lock").touch()
    with lock_held_elsewhere(store / "lock"):
        out = run("query", store, "--config", CONF, "--phy-offset", "0", "--json")
    assert out.returncode == 0, out.stderr
    warning = [line for line in out.stderr.splitlines() if "warning:" in line]
    assert len(warning) == 1 and len(warning[0]) > 80
    assert warning[0].endswith("holds the store's lock (a running broker?): answers may be moving")


def test_salvage_wraps_its_stderr_table_and_summary_in_a_pipe(tmp_path):
    store = _deep_store(tmp_path)
    seg = store / "commitlog" / f"{0:020d}"
    b = bytearray(seg.read_bytes())
    b[2000:2100] = os.urandom(100)
    seg.write_bytes(bytes(b))
    out = run("salvage", store, "--config", CONF, "--out", tmp_path / "s.jsonl")
    assert out.returncode == 1, out.stderr
    rows = [line for line in out.stderr.splitlines() if str(seg) in line]
    assert len(rows) == 1 and "error" in rows[0] and "commitlog" in rows[0]  # the finding is one line, path whole
    summary = [line for line in out.stderr.splitlines() if "intact messages written to" in line]
    assert len(summary) == 1 and summary[0].rstrip().endswith("1 corrupt region skipped")


def test_a_stdout_table_is_squeezed_to_160_columns_in_a_pipe(tmp_path):
    store = _deep_store(tmp_path)
    out = run("info", store, "--config", CONF)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if str(store) in line]
    assert rows and all(len(line) > 160 for line in rows)
    assert not [line for line in out.stdout.splitlines() if line.startswith("│ ") and line.split("│")[1].strip() == ""
                and line.split("│")[2].strip()], "a cell continued on a second line"
