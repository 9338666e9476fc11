"""A write into an existing store is all or nothing: an import interrupted by SIGINT or SIGTERM is
rolled back at once; one killed with SIGKILL is rolled back by the next writer or by `recover`, which
say so; `info` and `recover --dry-run` show the pending journal."""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_helpers import RMQTOOL, RUN_GUARD_S, run

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.journal import JOURNAL_NAME
from rmqtool.engine.message_store import MessageStore
from rmqtool.engine.producer import build_message

DEADLINE_S = RUN_GUARD_S
CONF = "mappedFileSizeCommitLog=1048576\nmappedFileSizeConsumeQueue=6000\nmaxHashSlotNum=64\nmaxIndexNum=256\n"


def _digest(root: Path) -> dict[str, str]:
    """Every file of the store but `lock`, by path: what an interrupted write must not change (lost/ aside:
    recovery keeps there what a killed writer left outside the store's files, such as a segment it was making)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "lock"
            and p.relative_to(root).parts[0] != "lost"}


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    conf = tmp_path / "broker.conf"
    conf.write_text(CONF)
    root = tmp_path / "store"
    cfg, _ = StoreConfig.from_file(conf)
    with MessageStore(root, cfg) as ms:
        for i in range(20):
            ms.put_message(build_message("Existing", f"m{i}".encode(), keys=f"k{i}"))
    return root, conf


@pytest.fixture(scope="module")
def big_rows(tmp_path_factory) -> Path:
    """Producer rows that take an import a few seconds: time to interrupt it."""
    path = tmp_path_factory.mktemp("rows") / "rows.parquet"
    n = 150_000
    pq.write_table(pa.table({"topic": ["Loaded"] * n, "bodyText": ["x" * 2000] * n,
                             "keys": [f"key-{i}" for i in range(n)]}), path)
    return path


def _started(root: Path, proc: subprocess.Popen) -> None:
    """Wait until the import has its journal and has written past the store's first segment."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if (root / JOURNAL_NAME).exists() and len(list((root / "commitlog").iterdir())) > 3:
            return
        if proc.poll() is not None:
            raise AssertionError(f"the import ended before it could be interrupted: {proc.stderr.read()}")
        time.sleep(0.005)
    raise AssertionError("the import never started writing")


def _import(root: Path, conf: Path, rows: Path) -> subprocess.Popen:
    return subprocess.Popen([RMQTOOL, "import", str(root), str(rows), "--config", str(conf)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_import_stopped_by_a_signal_leaves_the_store_as_it_was(store, big_rows, sig):
    root, conf = store
    before = _digest(root)
    proc = _import(root, conf, big_rows)
    _started(root, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 128 + sig
    said = "terminated" if sig == signal.SIGTERM else "interrupted"
    assert err.strip().splitlines() == [f"rmqtool: {said}: `import` stopped; what it wrote was rolled back: "
                                        f"{root} is as it was"]
    assert _digest(root) == before


def test_import_killed_with_sigkill_is_rolled_back_by_recover_and_the_next_writer(store, big_rows, tmp_path):
    root, conf = store
    before = _digest(root)
    proc = _import(root, conf, big_rows)
    _started(root, proc)
    proc.kill()
    proc.wait(DEADLINE_S)
    assert (root / JOURNAL_NAME).exists() and (root / "abort").exists()

    info = run("info", root, "--json")
    assert json.loads(info.stdout)["interruptedWrite"]["command"] == "import"
    dry = run("recover", root, "--dry-run")
    assert "first, an interrupted `import`" in dry.stderr and (root / JOURNAL_NAME).exists()

    by_append = shutil.copytree(root, tmp_path / "by-append")
    recovered = run("recover", root)
    assert recovered.returncode == 0, recovered.stderr
    assert "an interrupted `import`" in recovered.stderr and "is rolled back" in recovered.stderr
    assert _digest(root) == before

    appended = run("append", by_append, "--config", conf, "--topic", "After", "--body", "x")
    assert appended.returncode == 0, appended.stderr
    assert "an interrupted `import`" in appended.stderr
    assert not (by_append / JOURNAL_NAME).exists() and not (by_append / "abort").exists()
    listed = run("decode", "commitlog", by_append, "--jsonl", "--config", conf)
    assert [json.loads(line)["topic"] for line in listed.stdout.splitlines()] == ["Existing"] * 20 + ["After"]


def test_a_complete_import_leaves_no_journal(store, tmp_path):
    root, conf = store
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"topic": "T", "bodyText": "a"}\n')
    done = run("import", root, rows, "--config", conf)
    assert done.returncode == 0, done.stderr
    assert not (root / JOURNAL_NAME).exists()


@pytest.mark.parametrize("when", ["its file is written", "it is in place"])
def test_an_interrupt_while_the_journal_is_made_left_it_behind(store, monkeypatch, when):
    """Ctrl-C landing in the journal's own write (before the transaction's first byte) escaped the roll back:
    the journal (or its .tmp) stayed and made the store look like an interrupted write."""
    import types

    from rmqtool.engine import journal
    from rmqtool.engine.rollback import transaction
    from rmqtool.errors import Interrupted

    root, conf = store
    cfg, _ = StoreConfig.from_file(conf)
    before = _digest(root)
    calls = []

    def interrupt_once(real):
        def call(*args, **kwargs):
            calls.append(1)
            if len(calls) == 1:
                raise KeyboardInterrupt
            return real(*args, **kwargs)
        return call

    if when == "its file is written":
        monkeypatch.setattr(journal, "json", types.SimpleNamespace(dump=interrupt_once(json.dump)))
    else:
        monkeypatch.setattr(journal, "fsync_path", interrupt_once(journal.fsync_path))
    with MessageStore(root, cfg) as ms:
        end = ms.commitlog.max_offset
        try:
            with transaction(ms, "append"):
                ms.put_message(build_message("Existing", b"never"))
        except (Interrupted, KeyboardInterrupt) as e:
            stopped = e
    monkeypatch.undo()
    assert calls and isinstance(stopped, Interrupted)  # not a bare KeyboardInterrupt past the roll back
    assert [p.name for p in root.iterdir() if "journal" in p.name] == []
    after = _digest(root)
    assert {k for k in after if after[k] != before.get(k)} <= {"checkpoint"}
    with MessageStore(root, cfg) as ms:
        assert ms.commitlog.max_offset == end
