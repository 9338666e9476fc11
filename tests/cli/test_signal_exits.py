"""A command stopped by a signal exits with the shell's code for it: 130 after SIGINT (Ctrl-C), 143 after SIGTERM,
whatever the command (a writer, a reader, the two `ha` commands); before, every SIGTERM was exit 130."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_helpers import CONF, FIXTURE, RMQTOOL, RUN_GUARD_S, tree_digest, writable_copy

from rmqtool.bench.generate import generate_store
from rmqtool.engine.journal import JOURNAL_NAME
from rmqtool.errors import EXIT_INTERRUPTED, EXIT_TERMINATED

SIGNALS = [signal.SIGINT, signal.SIGTERM]
EXPECTED = {signal.SIGINT: EXIT_INTERRUPTED, signal.SIGTERM: EXIT_TERMINATED}
SAID = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}  # SIGTERM said "interrupted" too


def _start(*args, **kw) -> subprocess.Popen:
    return subprocess.Popen([RMQTOOL, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **kw)


def _until(condition, proc: subprocess.Popen, what: str) -> None:
    """Wait for `condition` while `proc` runs (a generous deadline: a last guard, not a speed limit)."""
    deadline = time.monotonic() + RUN_GUARD_S
    while not condition():
        assert proc.poll() is None, f"ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.005)


def _stop(proc: subprocess.Popen, sig: signal.Signals) -> tuple[int, str]:
    proc.send_signal(sig)
    try:
        _out, err = proc.communicate(timeout=RUN_GUARD_S)
    finally:
        proc.kill()
    return proc.returncode, err


@pytest.fixture(scope="module")
def many_rows(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("rows") / "rows.jsonl"
    path.write_text("".join(json.dumps({"topic": "OrderTopic", "bodyText": f"order {i}", "queueId": i % 4}) + "\n"
                            for i in range(200_000)))
    return path


@pytest.fixture(scope="module")
def big_store(tmp_path_factory) -> Path:
    return generate_store(tmp_path_factory.mktemp("big") / "store", 50_000, 100, segment_size=1 << 22).root


@pytest.mark.parametrize("sig", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_sigterm_exits_143_and_sigint_130_for_a_writer(tmp_path, many_rows, sig):
    store = writable_copy(FIXTURE, tmp_path / "store")
    before = tree_digest(store)
    proc = _start("append", store, "--batch", many_rows)
    _until((store / JOURNAL_NAME).exists, proc, "began writing")
    code, err = _stop(proc, sig)
    assert code == EXPECTED[sig]
    assert err == (f"rmqtool: {SAID[sig]}: `append --batch` stopped; what it wrote was rolled back: {store} "
                   "is as it was\n")
    assert tree_digest(store) == before


def test_a_spark_load_stopped_in_process_names_spark_load_not_import(tmp_path, many_rows):
    """The in-process spark-load's rollback line said `import` stopped."""
    store = writable_copy(FIXTURE, tmp_path / "store")
    before = tree_digest(store)
    proc = _start("spark-load", many_rows, "--store", store, "--config", CONF, "--spark-threshold", 1_000_000)
    _until((store / JOURNAL_NAME).exists, proc, "began writing")
    code, err = _stop(proc, signal.SIGTERM)
    assert (code, err) == (EXIT_TERMINATED, f"rmqtool: terminated: `spark-load` stopped; what it wrote was rolled "
                                            f"back: {store} is as it was\n")
    assert tree_digest(store) == before


@pytest.mark.parametrize("sig", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_sigterm_exits_143_and_sigint_130_for_a_reader(big_store, sig):
    proc = _start("decode", "commitlog", big_store, "--json")
    assert proc.stdout.readline().startswith("{")  # decoding; the pipe, unread from now, soon holds it still
    code, err = _stop(proc, sig)
    assert (code, err) == (EXPECTED[sig], f"rmqtool: {SAID[sig]}\n")


@pytest.mark.parametrize("sig", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_sigterm_exits_143_and_sigint_130_for_ha_serve_and_ha_follow(tmp_path, sig):
    master = writable_copy(FIXTURE, tmp_path / "master")
    serve = _start("ha", "serve", master, "--port", "0")
    try:
        line = serve.stderr.readline()
        port = re.search(r" on 127\.0\.0\.1:(\d+) ", line)
        assert port, line
        follow = _start("ha", "follow", tmp_path / "slave", "--master", f"127.0.0.1:{port[1]}", "--config", CONF,
                        "--jsonl")
        try:
            status = json.loads(follow.stdout.readline())
            assert status["master"] == f"127.0.0.1:{port[1]}"
            followed = _stop(follow, sig)
        finally:
            follow.kill()
        served = _stop(serve, sig)
    finally:
        serve.kill()
    assert (followed[0], "Traceback" in followed[1]) == (EXPECTED[sig], False), followed[1]
    assert (served[0], "Traceback" in served[1]) == (EXPECTED[sig], False), served[1]
    assert not (master / "abort").exists() and not (tmp_path / "slave" / "abort").exists()
