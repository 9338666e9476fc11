"""A writer killed with SIGKILL around its commit: `append --batch --flush sync` is in whole or not at all, and
its report tells which as far as it can. The duplicate batch a kill -9 campaign once found was a report lost after
the commit (the summary was printed only after the close), so the campaign sent the committed rows again: the
summary now comes the moment the write commits, and a writer killed without one may have written all its rows."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

from cli_helpers import CONF, RMQTOOL, fixture_copy, run

from rmqtool.engine.journal import JOURNAL_NAME

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
