"""A writer killed with SIGKILL around its commit: `append --batch --flush sync` is in whole or not at all, and its
report says which as far as a report can. The duplicate batch a kill -9 campaign once found was an acknowledgement
lost after the commit: the journal went before the store's close and the summary came after it (into a pipe's
buffer), so a kill in between left a whole batch with no report and the campaign sent its rows again. The commit is
now the close's last step and the summary is flushed right after it; a writer killed without a report may still
have written everything (the docs say to check the store before sending again)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_helpers import CONF, RMQTOOL, fixture_copy, run

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.journal import JOURNAL_NAME
from rmqtool.engine.message_store import MessageStore

ROWS = 3000
GUARD_S = 120  # a last guard against a hung writer, never a speed limit
DELAYS_S = (0.0, 0.01, 0.03, 0.1, 0.3)  # after the journal appears


def _messages(store: Path, topic: str) -> int:
    doc = json.loads(run("info", store, "--json", "--config", CONF).stdout)
    return {t["topic"]: t["messages"] for t in doc["consumeQueues"]["topics"]}.get(topic, 0)


def _kill(store: Path, rows: Path, delay: float | None) -> tuple[str, str]:
    """Kill the writer `delay` s after its journal appears (None: the instant the journal is gone, the commit);
    its stdout and `recover`'s stderr."""
    proc = subprocess.Popen([RMQTOOL, "append", str(store), "--batch", str(rows), "--batch-size", "64", "--flush",
                             "sync", "--config", str(CONF), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    journal = store / JOURNAL_NAME
    deadline = time.monotonic() + GUARD_S
    while not journal.exists() and proc.poll() is None:
        assert time.monotonic() < deadline, "the append never began"
    if delay is None:
        while journal.exists() and proc.poll() is None:
            pass
    else:
        time.sleep(delay)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=GUARD_S)
    assert "Traceback" not in err
    healed = run("recover", store, "--config", CONF)
    assert healed.returncode == 0, healed.stderr
    return out, healed.stderr


def test_a_killed_batch_append_is_in_whole_or_not_at_all_and_its_report_says_which(tmp_path):
    base = fixture_copy(tmp_path)
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"topic": "Batch", "bodyText": "z" * 600, "keys": f"b{i}"}) + "\n"
                            for i in range(ROWS)))
    seen = set()
    for n, delay in enumerate((*DELAYS_S, None, None)):
        store = shutil.copytree(base, tmp_path / f"s{n}")
        out, recovered = _kill(store, rows, delay)
        held = _messages(store, "Batch")
        assert held in (0, ROWS), (delay, held)  # never a part
        rolled_back = "an interrupted `append --batch`" in recovered
        assert rolled_back == (held == 0), (delay, recovered)
        if out:  # reported: everything is in, at the end it names
            report = json.loads(out)
            assert held == ROWS and report["messages"] == ROWS, (delay, out)
            seen.add("reported")
        else:
            seen.add("in, unreported" if held else "rolled back")
        if not held:  # resending from the last report (none) puts it in once
            again = run("append", store, "--batch", rows, "--config", CONF, "--json")
            assert again.returncode == 0, again.stderr
            assert _messages(store, "Batch") == ROWS
        assert run("verify", store, "--config", CONF).returncode == 0
    assert "rolled back" in seen, seen



WRITER = """
import os, sys
from rmqtool.engine import message_store, storefiles
from rmqtool.engine.config import StoreConfig
from rmqtool.io.sources import Source
from rmqtool.load.records import LoadOptions
from rmqtool.load.writer import load

def die(real=None):
    def call(*args):
        if real is not None:
            real(*args)
        os._exit(9)
    return call

point = sys.argv[4]
if point == "the store's close begins":
    message_store.MessageStore._close = die()
if point == "abort is removed":
    storefiles.remove_abort = die(storefiles.remove_abort)
cfg = StoreConfig.from_file(sys.argv[3])[0]
load(sys.argv[1], Source(sys.argv[2], "jsonl"), LoadOptions(cfg, 1_750_000_000_000), register_topics=True,
     clock=lambda: 1_800_000_000_000, command="append --batch")
if point == "it returns":
    die()()
"""
KILLS = {"the store's close begins": "before", "abort is removed": "before", "it returns": "after"}


def _files(store: Path) -> dict[str, bytes]:
    """Every file but `lock`, the topic table's write time left out."""
    out = {}
    for p in sorted(store.rglob("*")):
        if p.is_file() and p.name != "lock":
            data = p.read_bytes()
            if p.name == "topics.json":
                doc = json.loads(data)
                doc["dataVersion"].pop("timestamp")
                data = json.dumps(doc).encode()
            out[str(p.relative_to(store))] = data
    return out


@pytest.mark.parametrize("point", list(KILLS))
def test_a_write_killed_between_its_last_byte_and_its_report_is_before_or_after_its_topic_table_included(
        tmp_path, point):
    """The interruption campaign's `[import-kill]` once found a store neither before nor after with every file in
    one of the two: killed after the commit, the write was whole but for config/topics.json, registered only at
    the close. The table is now written before the commit, and the commit is the clean close's last step (a kill
    before it is rolled back, not left to a crash recovery that indexes the last record's keys again)."""
    import sys

    base = fixture_copy(tmp_path)
    with MessageStore(base, StoreConfig.from_file(CONF)[0]):
        pass
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"topic": f"New{i % 3}", "bodyText": "z" * 300, "keys": f"n{i}"}) + "\n"
                            for i in range(400)))
    whole, killed = (shutil.copytree(base, tmp_path / name) for name in ("whole", "killed"))
    for store, how in ((whole, "live"), (killed, point)):
        done = subprocess.run([sys.executable, "-c", WRITER, str(store), str(rows), str(CONF), how],
                              capture_output=True, text=True, timeout=GUARD_S)
        assert done.returncode == (0 if how == "live" else 9), done.stderr
    assert (killed / JOURNAL_NAME).exists() == (KILLS[point] == "before")
    healed = run("recover", killed, "--config", CONF)
    assert healed.returncode == 0, healed.stderr
    assert ("an interrupted `append --batch`" in healed.stderr) == (KILLS[point] == "before"), healed.stderr
    now, expected = _files(killed), _files(base if KILLS[point] == "before" else whole)
    assert sorted(now) == sorted(expected)
    assert [f for f in expected if now[f] != expected[f]] == []
