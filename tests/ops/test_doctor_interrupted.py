"""An interrupted `doctor --apply` ends where an uninterrupted one does.

For each damage of the matrix the doctor has a plan for, an uninterrupted `doctor --apply` (the console script,
with RMQTOOL_TEST_TRACE) names the repair's steps; then, on a fresh copy per step, the repair is SIGKILLed at that
step (RMQTOOL_TEST_KILL_AT), `doctor --apply --json` runs once more, and `doctor --json` finds the store healthy.
The store's files then equal the uninterrupted run's byte for byte (index files compared by content in name
order: their names may be times; `lock` and lost/ aside), its one lost/ folder holds what the uninterrupted run's
holds (the same ledger.jsonl, positions.json and kept files; plan.json with the store's path written as STORE),
and a kill before `committed` leaves the store as it was, with no lost/ folder. The same holds for kills at random
moments of the console script, and when the next writer after a kill past `committed` is `recover`, `rebuild` or
`append` instead of the doctor.

Each copy carries committed consumer positions on the queues a cut renumbers, so the positions step and the swap
of config/consumerOffset.json are among the steps interrupted. The runs at every step, and the runs after a kill,
are `cli_helpers.run`'s children of the warm zygote (tests/zygote.py: the console script's entry point without a
new interpreter's imports, ~70 runs per damage matrix); the reference runs and the random kills are the console
script.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest
from cli_helpers import CONF, RMQTOOL, RUN_GUARD_S, run, wait_for
from damage import damaged_stores
from zygote import FROZEN_STAMP

from rmqtool.engine.reader import open_reader
from rmqtool.files.lock import lock_holder
from rmqtool.files.paths import StorePaths
from rmqtool.files.swap import JOURNAL, STAGING_DIR, pending_swap
from rmqtool.ops.log_rows import log_rows
from rmqtool.ops.repair import KILL_AT_ENV, TRACE_ENV

# every damage of tests/damage.py the doctor mends in place (middle-missing is unmendable: nothing to interrupt)
DAMAGES = ["crc-mid", "torn-tail", "last-zeroed", "queue-truncated", "no-queue-folder", "index-deleted",
           "queue-tail-zeroed", "checkpoint-deleted"]
COMMITTED = "committed"
SWAPPED_LOST = "swapped lost/"
# committed positions on every queue of the fixture's three topics, some past the records a cut loses
CONSUMER_OFFSETS = ('{\n\t"offsetTable":{\n\t\t"OrderTopic@billing":{0:30,1:32,2:20,3:31\n\t\t},'
                    '\n\t\t"PaymentTopic@billing":{0:50,1:60\n\t\t},\n\t\t"AuditLogTopic@audit":{2:125\n\t\t}\n\t}\n}')
RANDOM_ROUNDS = 4


def _damaged(where: Path, damage: str) -> Path:
    """A copy of the fixture store with `damage` done to it and CONSUMER_OFFSETS committed."""
    store = damaged_stores(where, [damage])[damage]
    (store / "config").mkdir()
    (store / "config" / "consumerOffset.json").write_text(CONSUMER_OFFSETS)
    return store


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _state(store: Path, *, staging: bool = True) -> dict[str, object]:
    """Every file (its sha256) and folder of the store, lost/ and `lock` aside; the index files as one list of
    contents in name order (their names may be times); `staging=False`: .rebuild/ aside too."""
    out: dict[str, object] = {}
    index: list[str] = []
    for p in sorted(store.rglob("*")):
        rel = p.relative_to(store)
        if rel.parts[0] == "lost" or rel == Path("lock") or (not staging and rel.parts[0] == STAGING_DIR):
            continue
        if rel.parts[0] == "index" and p.is_file():
            index.append(_sha(p))
        else:
            out[str(rel)] = "folder" if p.is_dir() else _sha(p)
    out["index/*"] = index
    return out


def _lost(store: Path) -> dict[str, dict[str, str]]:
    """Each lost/ folder by name: its files' contents (plan.json's and ledger's with the store's path as STORE)."""
    out: dict[str, dict[str, str]] = {}
    lost = store / "lost"
    for folder in sorted(lost.iterdir()) if lost.is_dir() else []:
        files = {}
        for p in sorted(folder.rglob("*")):
            rel = str(p.relative_to(folder))
            if p.is_dir():
                files[rel] = "folder"
            elif p.suffix in (".json", ".jsonl"):
                files[rel] = p.read_text(encoding="utf-8").replace(str(store), "STORE")
            else:
                files[rel] = _sha(p)
        out[folder.name] = files
    return out


def _doc(out: subprocess.CompletedProcess, store: Path) -> dict:
    """The JSON a doctor printed, with the store's path written as STORE."""
    assert "Traceback" not in out.stderr, out.stderr
    try:
        return json.loads(out.stdout.replace(json.dumps(str(store))[1:-1], "STORE"))
    except json.JSONDecodeError:
        raise AssertionError(f"exit {out.returncode}, no JSON: {out.stdout!r} {out.stderr!r}") from None


def _plan_of(doc: dict) -> dict:
    """What an --apply run's JSON says of its plan and its outcome, its lost/ folder's name aside."""
    return {k: v for k, v in doc.items() if k != "lost"}


@dataclass
class Reference:
    """An uninterrupted `doctor --apply` of one damage: its steps, the store and lost/ folder it leaves, its JSON,
    the damaged store's state before it, and how long its work took (from taking the store's lock to its end)."""

    store: Path
    steps: list[str]
    before: dict[str, object]
    after: dict[str, object]
    lost: dict[str, str]
    doc: dict
    work_s: float

    def kill_step(self, step: str) -> str:
        """`step` as a child with a frozen lost/ clock reaches it (the lost/ folder's name is FROZEN_STAMP)."""
        return SWAPPED_LOST + FROZEN_STAMP if step.startswith(SWAPPED_LOST) else step

    def committed(self, step: str) -> bool:
        return self.steps.index(step) >= self.steps.index(COMMITTED)


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """damage -> its Reference, made on first use (each xdist worker makes the ones its tests need)."""
    made: dict[str, Reference] = {}

    def get(damage: str) -> Reference:
        if damage not in made:
            made[damage] = _reference(tmp_path_factory.mktemp(f"ref-{damage}"), damage)
        return made[damage]

    return get


def _no_hooks() -> dict[str, str]:
    """This process's environment without the repair's interruption hooks."""
    return {k: v for k, v in os.environ.items() if k not in (KILL_AT_ENV, TRACE_ENV)}


def _reference(where: Path, damage: str) -> Reference:
    store = _damaged(where, damage)
    before = _state(store)
    trace = where / "trace"
    proc = subprocess.Popen([RMQTOOL, "doctor", str(store), "--config", str(CONF), "--apply", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**_no_hooks(), TRACE_ENV: str(trace)})
    start = time.monotonic()
    paths = StorePaths(store)
    wait_for(lambda: proc.poll() is not None or lock_holder(paths) == proc.pid, f"{damage}: doctor takes the lock")
    if proc.poll() is None:
        start = time.monotonic()
    stdout, stderr = proc.communicate(timeout=RUN_GUARD_S)
    work_s = time.monotonic() - start
    assert (proc.returncode, stderr) == (0, ""), f"{damage}: exit {proc.returncode}: {stderr}"
    doc = _doc(subprocess.CompletedProcess([], 0, stdout, stderr), store)
    assert doc["status"] == "mended", f"{damage}: {doc}"
    steps = trace.read_text(encoding="utf-8").splitlines()
    assert COMMITTED in steps and steps[-1].startswith("swapped "), f"{damage}: {steps}"
    lost = _lost(store)
    assert len(lost) == 1, f"{damage}: {sorted(lost)}"
    return Reference(store, steps, before, _state(store), next(iter(lost.values())), _plan_of(doc), work_s)


BEFORE_COMMIT, AFTER_COMMIT, FINISHED = "killed before the commit", "killed after the commit", "finished"


def _assert_ends_as_uninterrupted(ref: Reference, store: Path, scratch: Path, what: str, ended: str) -> None:
    """`doctor --apply --json` once more, then `doctor --json` healthy, and the store and its one lost/ folder as
    the uninterrupted run left them. `ended`: how the first run ended."""
    again = run("doctor", store, "--config", CONF, "--apply", "--json")
    doc = _doc(again, store)
    assert again.returncode == 0, f"{what}: the rerun exits {again.returncode}: {doc}\n{again.stderr}"
    if ended == BEFORE_COMMIT:
        assert _plan_of(doc) == ref.doc, f"{what}: the rerun's plan and outcome differ from the uninterrupted run's"
    else:
        assert (doc["status"], doc["finishedInterruptedRepair"]) == ("healthy", ended == AFTER_COMMIT), \
            f"{what}: rerun {doc}"
    check = run("doctor", store, "--config", CONF, "--json")
    checked = _doc(check, store)
    assert (check.returncode, checked["status"]) == (0, "healthy"), f"{what}: doctor --json after the rerun: {checked}"
    after = _state(store)
    differ = sorted(k for k in set(after) | set(ref.after) if after.get(k) != ref.after.get(k))
    assert not differ, f"{what}: differs from the uninterrupted run's store: {differ}"
    lost = _lost(store)
    assert len(lost) == 1, f"{what}: lost/ folders {sorted(lost)}, the finished repair's alone expected"
    name, kept = next(iter(lost.items()))
    if ended == AFTER_COMMIT:
        assert name == FROZEN_STAMP, f"{what}: lost/{name} is not the killed repair's lost/{FROZEN_STAMP}"
    for doc_name in ("ledger.jsonl", "positions.json"):
        assert kept.get(doc_name) == ref.lost[doc_name], f"{what}: lost/{name}/{doc_name} differs"
    differ = sorted(k for k in set(kept) | set(ref.lost) if kept.get(k) != ref.lost.get(k))
    assert not differ, f"{what}: lost/{name} differs from the uninterrupted run's: {differ}"


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_doctor_killed_at_each_step_ends_where_an_uninterrupted_one_does(references, tmp_path, damage):
    ref = references(damage)
    failures = []
    for n, step in enumerate(ref.steps):
        what = f"{damage}, killed at {step!r}"
        store = _damaged(tmp_path / f"step{n}", damage)
        killed = run("doctor", store, "--config", CONF, "--apply", "--json",
                            env={KILL_AT_ENV: ref.kill_step(step)}, frozen_lost_clock=True)
        try:
            assert killed.returncode == -signal.SIGKILL, f"{what}: exit {killed.returncode}, not SIGKILL: " \
                                                         f"{killed.stdout[-300:]} {killed.stderr}"
            assert "Traceback" not in killed.stderr, killed.stderr
            journal = (store / STAGING_DIR / JOURNAL).is_file()
            if ref.committed(step):
                assert journal, f"{what}: no swap journal left"
            else:
                assert not journal, f"{what}: a swap journal before the commit"
                assert not (store / "lost").exists(), f"{what}: a lost/ folder before the commit"
                assert _state(store, staging=False) == ref.before, f"{what}: the store changed before the commit"
            _assert_ends_as_uninterrupted(ref, store, tmp_path, what,
                                          AFTER_COMMIT if ref.committed(step) else BEFORE_COMMIT)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, f"{len(failures)} of {len(ref.steps)} steps:\n" + "\n".join(failures)


@pytest.mark.parametrize("damage", ["crc-mid", "last-zeroed"])
def test_a_doctor_killed_at_a_random_moment_ends_where_an_uninterrupted_one_does(references, tmp_path, damage):
    """The console script SIGKILLed after a random part of an uninterrupted run's work (timed from taking the
    store's lock to its end), then run again."""
    ref = references(damage)
    rng = random.Random(f"doctor-kill-{damage}")
    for n in range(RANDOM_ROUNDS):
        store = _damaged(tmp_path / f"round{n}", damage)
        delay = rng.uniform(0, ref.work_s)
        proc = subprocess.Popen([RMQTOOL, "doctor", str(store), "--config", str(CONF), "--apply", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_no_hooks())
        paths = StorePaths(store)
        wait_for(lambda p=proc, s=paths: p.poll() is not None or lock_holder(s) == p.pid,
                 f"{damage} round {n}: doctor takes the lock")
        time.sleep(delay)  # the random moment of the work the kill lands at
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=RUN_GUARD_S)
        journal = (store / STAGING_DIR / JOURNAL).is_file()
        what = f"{damage} round {n} (seed 'doctor-kill-{damage}', kill {delay:.3f} s into the work, exit " \
               f"{proc.returncode}, journal {'left' if journal else 'absent'})"
        assert proc.returncode in (0, -signal.SIGKILL), f"{what}: {err}"
        assert "Traceback" not in err, f"{what}: {err}"
        # killed with no journal: before the commit (no lost/ folder yet), or after the swap's last step
        ended = AFTER_COMMIT if journal else FINISHED if proc.returncode == 0 or (store / "lost").exists() \
            else BEFORE_COMMIT
        print(f"{what}: {ended}")
        if ended == BEFORE_COMMIT:
            assert _state(store, staging=False) == ref.before, f"{what}: the store changed before the commit"
        _assert_ends_as_uninterrupted(ref, store, tmp_path, what, ended)


def _messages(store: Path) -> set[tuple]:
    """Every intact message, by what stays when it moves to a new offset."""
    out = set()
    for item in log_rows(open_reader(store, CONF)):
        if isinstance(item, pa.RecordBatch):
            for r in item.select(["topic", "queueId", "bornTimestamp", "body", "propertiesString"]).to_pylist():
                out.add(tuple(r.values()))
    return out


def _left_to_swap(store: Path) -> list[str]:
    """The parts the swap journal names that are not swapped in yet."""
    doc = pending_swap(StorePaths(store))
    assert doc is not None
    return [live for live, staged in doc["parts"]
            if os.path.lexists(store / (staged if staged is not None else live))]


def test_recover_rebuild_and_append_after_a_kill_past_the_commit_finish_the_swap(references, tmp_path):
    """The next writer is not always the doctor: each of them finishes the parts the journal has left first."""
    ref = references("crc-mid")
    first = ref.steps.index(COMMITTED)
    swaps = [s.removeprefix("swapped ") for s in ref.steps[first + 1 :]]
    cases = [(COMMITTED, ["recover", "--config", CONF]),
             (ref.steps[first + 1], ["rebuild", "--queues", "--apply", "--config", CONF]),
             (ref.steps[first + 2], ["append", "--topic", "OrderTopic", "--body", "after the kill", "--config", CONF])]
    for n, (step, command) in enumerate(cases):
        what = f"{command[0]} after a kill at {step!r}"
        store = _damaged(tmp_path / f"case{n}", "crc-mid")
        killed = run("doctor", store, "--config", CONF, "--apply",
                            env={KILL_AT_ENV: ref.kill_step(step)}, frozen_lost_clock=True)
        assert killed.returncode == -signal.SIGKILL, f"{what}: the doctor exits {killed.returncode}: {killed.stderr}"
        left = swaps[ref.steps.index(step) - first :]
        left = [SWAPPED_LOST.removeprefix("swapped ") + FROZEN_STAMP if s.startswith("lost/") else s for s in left]
        assert _left_to_swap(store) == left, what
        done = run(command[0], store, *command[1:])
        assert done.returncode == 0 and "Traceback" not in done.stderr, f"{what}: exit {done.returncode}: " \
                                                                          f"{done.stdout}{done.stderr}"
        assert not (store / STAGING_DIR).exists(), f"{what}: {sorted(os.listdir(store / STAGING_DIR))} left"
        lost = _lost(store)
        assert list(lost) == [FROZEN_STAMP] and lost[FROZEN_STAMP] == ref.lost, f"{what}: lost/ {sorted(lost)}"
        check = run("doctor", store, "--config", CONF, "--json")
        assert (check.returncode, _doc(check, store)["status"]) == (0, "healthy"), f"{what}: {check.stdout}"
        if command[0] == "append":
            now, before = _messages(store), _messages(ref.store)
            assert before <= now, f"{what}: records of the repaired store are gone"
            assert [(m[0], m[1], m[3]) for m in now - before] == [("OrderTopic", 0, b"after the kill")], what
        else:
            assert _state(store) == ref.after, f"{what}: differs from the uninterrupted run's store"
