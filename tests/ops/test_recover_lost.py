"""`recover` keeps what it cuts, as LevelDB's repair keeps lost/: every zeroed range and removed file goes
first to STORE/lost/<UTC time>/ (with plan.json), and the store lock is held from the plan to the end
of the re-dispatch."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import CONF, RUN_GUARD_S, fixture_copy, run
from tail_damage import CUT_AT, GARBAGE, LAST_SEGMENT, LOG_END, SEG, crash_with_damaged_tail

from rmqtool.files.lock import StoreLock
from rmqtool.ops import recovery

STAMP = re.compile(r"\d{8}T\d{6}Z")
LAST = f"commitlog/{LAST_SEGMENT}"
# what recovery cuts from the damaged fixture: the log's tail and one entry of three queues (file, from, to)
CUTS = [(LAST, CUT_AT - 2 * SEG, LOG_END - 2 * SEG + GARBAGE),
        (f"consumequeue/AuditLogTopic/2/{0:020d}", 129 * 20, 130 * 20),
        (f"consumequeue/OrderTopic/1/{0:020d}", 31 * 20, 32 * 20),
        (f"consumequeue/PaymentTopic/0/{0:020d}", 63 * 20, 64 * 20)]
INDEX_FILES = ["index/20231114221320000", "index/20231114221320001", "index/20231114221320002"]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = fixture_copy(tmp_path)
    crash_with_damaged_tail(root)
    return root


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def digest(root: Path) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in files(root).items()}


def stamps_between(start: float, end: float) -> set[str]:
    return {time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t)) for t in range(int(start), int(end) + 1)}


def test_recover_lost_plus_remains_is_the_original(store):
    before = files(store)
    started = time.time()
    out = run("recover", store, "--config", CONF, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    [lost] = (store / "lost").iterdir()
    assert STAMP.fullmatch(lost.name) and lost.name in stamps_between(started, time.time())
    assert doc["lostDir"] == str(lost)
    plan = json.loads((lost / "plan.json").read_text())
    assert plan["truncated"] == doc["truncated"] and plan["deletedFiles"] == doc["deletedFiles"]
    cuts = [(str(Path(t["file"]).relative_to(store)), t["from"], t["to"]) for t in plan["truncated"]]
    removed = [str(Path(d["file"]).relative_to(store)) for d in plan["deletedFiles"]]
    assert cuts == CUTS and removed == INDEX_FILES
    kept = {str(p.relative_to(lost)) for p in lost.rglob("*") if p.is_file()}
    assert kept == {"plan.json", *(f"{name}@{start}" for name, start, _ in CUTS), *INDEX_FILES}
    restored = {}
    for name, start, end in cuts:
        piece = (lost / f"{name}@{start}").read_bytes()
        now = bytearray((store / name).read_bytes())
        assert len(piece) == end - start and now[start:end] == bytes(end - start)  # zeroed in place
        now[start:end] = piece
        restored[name] = bytes(now)
    for name in removed:
        assert not (store / name).exists()
        restored[name] = (lost / name).read_bytes()
    after = files(store)
    for name, data in before.items():  # every original file: untouched, or put back whole from lost/
        if name in ("abort", "checkpoint"):  # removed and rewritten by the clean close that ends recovery
            continue
        assert restored.get(name, after.get(name)) == data, name
    assert set(restored) == {*(c[0] for c in CUTS), *INDEX_FILES}


def test_recover_dry_run_names_lost_dir_and_creates_nothing(store, tmp_path):
    before = digest(store)
    started = time.time()
    doc = json.loads(run("recover", store, "--config", CONF, "--dry-run", "--json").stdout)
    lines = run("recover", store, "--config", CONF, "--dry-run").stdout.splitlines()
    ended = time.time()
    named = Path(doc["lostDir"])
    assert named.parent == store / "lost" and named.name in stamps_between(started, ended)
    [line] = [ln for ln in lines if ln.startswith("  lost/ folder:")]
    assert re.fullmatch(r"  lost/ folder:   would keep 4 cut ranges and 3 removed files in lost/(\d{8}T\d{6}Z)/ "
                        r"with plan\.json, as they were", line)
    assert line.split("lost/")[2].rstrip("/ ").split("/")[0] in stamps_between(started, ended)
    assert not (store / "lost").exists() and digest(store) == before
    clean = fixture_copy(tmp_path / "clean")
    doc = json.loads(run("recover", clean, "--config", CONF, "--dry-run", "--json").stdout)
    assert doc["lostDir"] is None
    assert "  lost/ folder:   none (nothing is cut or removed)" in run(
        "recover", clean, "--config", CONF, "--dry-run").stdout.splitlines()


def held_elsewhere(lock_file: Path) -> str:
    """Whether another process could take the store's lock now: 'held' or 'free'."""
    probe = ("import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_RDWR)\n"
             "try:\n    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)\n    print('free')\n"
             "except OSError:\n    print('held')\n")
    return subprocess.run([sys.executable, "-c", probe, str(lock_file)], capture_output=True, text=True,
                          timeout=RUN_GUARD_S).stdout.strip()


def test_recover_holds_lock_from_plan_to_redispatch(store, monkeypatch, capsys):
    from rmqtool.cli.app import main

    events: list[str] = []
    taken: list[StoreLock] = []
    init, release = StoreLock.__init__, StoreLock.release

    def taking(self, *args, **kwargs):
        init(self, *args, **kwargs)
        taken.append(self)
        events.append("acquire")

    def releasing(self):
        if self.fd >= 0:
            events.append(f"release lock {taken.index(self)}")
        release(self)

    def observed(name: str, fn):
        def call(*args, **kwargs):
            result = fn(*args, **kwargs)
            events.append(f"{name}: {held_elsewhere(store / 'lock')}")
            return result
        return call

    monkeypatch.setattr(StoreLock, "__init__", taking)
    monkeypatch.setattr(StoreLock, "release", releasing)
    monkeypatch.setattr(recovery, "plan_recovery", observed("planned", recovery.plan_recovery))
    monkeypatch.setattr(recovery, "_keep_and_cut", observed("cut", recovery._keep_and_cut))
    monkeypatch.setattr(recovery, "_count_added", observed("re-dispatched", recovery._count_added))
    with pytest.raises(SystemExit) as done:
        main(["recover", str(store), "--config", str(CONF)])
    assert done.value.code == 0, capsys.readouterr().err
    assert events == ["acquire", "planned: held", "cut: held", "re-dispatched: held", "release lock 0"]
    assert taken[0].fd == -1 and held_elsewhere(store / "lock") == "free"
    assert not (store / "abort").exists() and (store / "lost").is_dir()
