"""The interruption campaign: SIGINT, SIGTERM and SIGKILL at random points of export, import into an
existing store, append --batch, recover --thorough and clean. Afterwards (after one `recover` when the
process was killed) every output path is absent or whole, and every store holds exactly what it held
before or what the complete command leaves (index files compared by content: their names are times)."""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_helpers import RMQTOOL, RUN_GUARD_S, run

from rmqtool.bench.generate import generate_store
from rmqtool.engine.journal import DELETIONS_NAME, JOURNAL_NAME

DEADLINE_S = RUN_GUARD_S  # a last guard: a busy machine is slow
SEGMENT = 4 << 20
SIGNALS = {"int": signal.SIGINT, "term": signal.SIGTERM, "kill": signal.SIGKILL}
COMMANDS = ("export", "import", "append-batch", "recover-thorough", "clean")


def _digest(root: Path) -> dict[str, list[str]]:
    """A store's files by path (index files pooled: their names are creation times; the time in topics.json's
    dataVersion left out), `lock` and lost/ aside."""
    out: dict[str, list[str]] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if not p.is_file() or p.name == "lock" or rel.parts[0] == "lost":
            continue
        key = "index/*" if rel.parts[0] == "index" else str(rel)
        data = p.read_bytes()
        if p.name == "topics.json":  # its dataVersion timestamp is the time of the write
            data = re.sub(rb'"timestamp":\d+', b"", data)
        out.setdefault(key, []).append(hashlib.sha256(data).hexdigest())
    return {k: sorted(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("campaign") / "base"
    generate_store(root, 60_000, 300, segment_size=SEGMENT)
    rows = root.parent / "rows.parquet"
    n = 40_000
    pq.write_table(pa.table({"topic": ["Loaded"] * n, "bodyText": ["y" * 800] * n,
                             "keys": [f"k{i}" for i in range(n)], "bornTimestamp": [1_700_000_000_000] * n}), rows)
    (root.parent / "rows.jsonl").write_text("".join(f'{{"topic": "Batch", "bodyText": "{"z" * 600}", '
                                                    f'"keys": "b{i}", "bornTimestamp": 1700000000000}}\n'
                                                    for i in range(30_000)))
    return root


def _prepare(base: Path, command: str, where: Path) -> Path:
    """The store a command starts from."""
    store = shutil.copytree(base, where)
    if command == "recover-thorough":
        shutil.rmtree(store / "index")
    if command == "clean":
        for seg in sorted((store / "commitlog").iterdir())[:2]:
            os.utime(seg, (1, 1))
    return store


def _args(command: str, store: Path, out: Path, inputs: Path) -> list[str]:
    stamp = ["--store-timestamp", "1700000001000"]
    return {
        "export": ["export", str(store), "--out", str(out)],
        "import": ["import", str(store), str(inputs / "rows.parquet"), *stamp],
        "append-batch": ["append", str(store), "--batch", str(inputs / "rows.jsonl")],
        "recover-thorough": ["recover", str(store), "--thorough"],
        "clean": ["clean", str(store), "--reserved-hours", "1"],
    }[command]


@pytest.fixture(scope="module")
def reference(base, tmp_path_factory) -> dict:
    """What each command leaves when it runs to the end, and how long it takes."""
    ref = {}
    for command in COMMANDS:
        where = tmp_path_factory.mktemp(f"ref-{command}")
        store = _prepare(base, command, where / "store")
        out = where / "out.jsonl"
        start = time.monotonic()
        done = run(*_args(command, store, out, base.parent))
        assert done.returncode == 0, f"{command}: {done.stderr}"
        ref[command] = {"after": _digest(store), "seconds": time.monotonic() - start,
                        "out": out.read_bytes() if out.exists() else None}
    return ref


def _started(command: str, store: Path, out: Path) -> bool:
    """The command has begun to change something."""
    if command == "export":
        return any(p.name.startswith(f".{out.name}") for p in out.parent.iterdir())
    if command in ("import", "append-batch"):
        return (store / JOURNAL_NAME).exists()
    if command == "recover-thorough":
        return (store / "abort").exists()
    return (store / DELETIONS_NAME).exists() or not (store / "commitlog" / f"{0:020d}").exists()


@pytest.mark.parametrize("sig", list(SIGNALS))
@pytest.mark.parametrize("command", COMMANDS)
def test_an_interrupted_command_leaves_before_or_after_never_between(base, reference, tmp_path, command, sig):
    rng = random.Random(f"{command}-{sig}")
    store = _prepare(base, command, tmp_path / "store")
    before = _digest(store)
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([RMQTOOL, *_args(command, store, out, base.parent)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + DEADLINE_S
    while not _started(command, store, out) and proc.poll() is None:
        assert time.monotonic() < deadline, f"{command} never started"
        time.sleep(0.001)
    time.sleep(rng.uniform(0, 0.8) * reference[command]["seconds"] / 2)  # a random point of the work
    if proc.poll() is None:
        proc.send_signal(SIGNALS[sig])
    _, err = proc.communicate(timeout=DEADLINE_S)
    assert "Traceback" not in err
    assert proc.returncode in (0, -signal.SIGKILL if sig == "kill" else 128 + SIGNALS[sig]), err
    if proc.returncode > 0:
        assert len(err.strip().splitlines()) == 1, err
    if sig == "kill" and command != "export":
        healed = run("recover", store)
        assert healed.returncode == 0, healed.stderr
    if command == "recover-thorough" and proc.returncode != 0:
        again = run("recover", store)  # a stopped recovery is finished by the next one
        assert again.returncode == 0, again.stderr
    after = _digest(store)
    if command == "append-batch" and after != before:  # a producer's append stamps its own times and keys
        _assert_appended_whole(store, before, reference[command]["after"])
    elif after not in (before, reference[command]["after"]):
        raise AssertionError(f"{command} {sig} (exit {proc.returncode}): neither before nor after: "
                             f"{_mix(after, before, reference[command]['after'])}")
    if command == "export":
        assert not out.exists() or out.read_bytes() == reference[command]["out"]
        if sig != "kill":
            assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def _mix(now: dict, before: dict, after: dict) -> str:
    """Which files are as before, which as after (a file absent is a state too: a topic table the write had not
    made yet), and which are neither: listing only the last hid a store whose every file was in one state or the
    other, the set a mix."""
    keys = sorted(k for k in set(now) | set(before) | set(after) if before.get(k) != after.get(k))
    at_before = [k for k in keys if now.get(k) == before.get(k)]
    at_after = [k for k in keys if now.get(k) == after.get(k)]
    neither = sorted(k for k in set(now) | set(before) | set(after) if now.get(k) not in (before.get(k), after.get(k)))
    return f"as before: {at_before}; as after: {at_after}; neither: {neither}"


def _assert_appended_whole(store: Path, before: dict, after: dict) -> None:
    """A complete `append --batch`: every row in, the store sound, the same files as the complete run's."""
    import json

    assert set(_digest(store)) == set(after)
    checked = run("verify", store)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    doc = json.loads(run("info", store, "--json").stdout)
    topics = {t["topic"]: t["messages"] for t in doc["consumeQueues"]["topics"]}
    assert topics.get("Batch") == 30_000, topics
