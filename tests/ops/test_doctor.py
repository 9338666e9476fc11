"""`doctor` on the damage matrix: each known damage gets its plan, `--apply` leaves a store verify finds clean,
nothing the broker's own recovery keeps is lost, and lost/ plus the store give back every original byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from cli_helpers import CONF, fixture_copy, run
from damage import SEG, corrupt, damaged_stores, restored_from_lost

from rmqtool.engine.reader import open_reader
from rmqtool.ops.log_rows import log_rows
from rmqtool.ops.verify import verify_path

QUEUE = f"consumequeue/OrderTopic/0/{0:020d}"


def messages(root: Path) -> set[tuple]:
    """Every intact message, by what stays when it moves to a new offset."""
    out = set()
    for item in log_rows(open_reader(root, CONF)):
        if isinstance(item, pa.RecordBatch):
            for r in item.select(["topic", "queueId", "bornTimestamp", "storeTimestamp", "body",
                                  "propertiesString"]).to_pylist():
                out.add(tuple(r.values()))
    return out


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.parts[len(root.parts)] != "lost" and p.name != "lock"}


def doctor(store: Path, *args: str) -> tuple[int, dict]:
    out = run("doctor", store, "--config", CONF, "--json", *args)
    assert out.stderr == "", out.stderr
    return out.returncode, json.loads(out.stdout)


# damage -> (the plan's actions in order, verify's problems before)
PLANS = {
    "no-queue-folder": (["rebuild-queues"], 33),
    "queue-tail-zeroed": (["rebuild-queues"], 13),
    "queue-truncated": (["rebuild-queues"], 19),
    "index-deleted": (["rebuild-index"], 728),
    "crc-mid": (["cut-and-repack", "rebuild-queues", "rebuild-index", "reset-checkpoint"], 4),  # 4: its queue gap
    "last-zeroed": (["recover", "rebuild-queues", "rebuild-index", "reset-checkpoint"], 43),
    "torn-tail": (["cut-and-repack", "rebuild-queues", "rebuild-index", "reset-checkpoint"], 7),
}


@pytest.mark.parametrize("damage", sorted(PLANS))
def test_doctor_apply_mends_each_known_damage_and_keeps_every_byte_in_lost(tmp_path, damage):
    store = damaged_stores(tmp_path, [damage])[damage]
    before, original = files(store), None
    keeps = tmp_path / "broker"  # what the broker's own recovery keeps of the same damage
    shutil.copytree(store, keeps)
    run("recover", keeps, "--config", CONF)
    kept_by_broker = messages(keeps)
    actions, problems = PLANS[damage]
    code, plan = doctor(store)
    assert (code, plan["status"], plan["problems"]) == (1, "plan", problems)
    assert [s["action"] for s in plan["steps"]] == actions
    assert files(store) == before  # the plan alone writes nothing
    code, done = doctor(store, "--apply")
    assert code == 0 and done["after"] == {"problems": 0, "warnings": 0, "byKind": {}}
    assert verify_path(store, CONF).problems == 0
    assert kept_by_broker <= messages(store)
    original = restored_from_lost(store, before)
    assert original == before


def test_doctor_on_a_healthy_store_says_healthy_and_exits_0(tmp_path):
    store = fixture_copy(tmp_path)
    out = run("doctor", store, "--config", CONF)
    assert out.returncode == 0
    assert out.stdout == (f"doctor {store}: healthy (420 messages, 400 consume-queue entries, 728 index entries "
                          "checked)\n")


def test_doctor_names_a_missing_middle_segment_it_cannot_mend_and_changes_nothing(tmp_path):
    store = fixture_copy(tmp_path)
    corrupt(store, f"commitlog/{SEG:020d}", "delete")
    before = files(store)
    for args in ((), ("--apply",)):
        code, doc = doctor(store, *args)
        assert code == 2 and doc["status"] == "unmendable"
        assert [(s["action"], Path(s["target"]).name) for s in doc["steps"]] == [("cannot-mend", f"{SEG:020d}")]
        assert "is missing" in doc["recoveryRefused"]
    assert files(store) == before and not (store / "lost").exists()


def test_doctor_cut_at_a_mid_log_crc_error_keeps_the_intact_records_after_it(tmp_path):
    """The broker's recovery would cut 211 intact records after the damaged one; the doctor appends them again."""
    store = damaged_stores(tmp_path, ["crc-mid"])["crc-mid"]
    intact = messages(store)
    code, plan = doctor(store)
    cut = plan["steps"][0]
    assert code == 1
    assert (cut["at"], cut["recordsLost"], cut["bytesLost"], cut["recordsKept"], cut["bytesKept"]) == (
        70747, 1, 172, 211, 80721)
    doctor(store, "--apply")
    assert messages(store) == intact  # every intact message, at new offsets
    ledger = [json.loads(line) for line in next((store / "lost").glob("*/ledger.jsonl")).read_text().splitlines()]
    assert [(r["commitLogOffset"], r["storeSize"], r["topic"], r["queueId"], r["queueOffset"]) for r in ledger] == [
        (70747, 172, "PaymentTopic", 0, 31)]


def test_verify_names_the_doctor_when_it_finds_a_problem_a_rebuild_mends(tmp_path):
    """verify found 33 problems on a missing queue folder and never named what mends them."""
    store = damaged_stores(tmp_path, ["no-queue-folder"])["no-queue-folder"]
    out = run("verify", store, "--config", CONF)
    assert out.returncode == 1
    assert out.stderr == (f"verify found 33 problems, 0 warnings that `rmqtool doctor {store} --apply` mends "
                          "(rebuild-queues)\n")


def test_recover_says_what_it_left_behind_instead_of_nothing_lost(tmp_path):
    """recover printed "would lose nothing" and exited 0 on a deleted index, leaving 728 problems."""
    store = damaged_stores(tmp_path, ["index-deleted"])["index-deleted"]
    dry = run("recover", store, "--config", CONF, "--dry-run")
    assert dry.returncode == 0
    assert dry.stderr == (f"the store has 728 problems, 0 warnings that `rmqtool doctor {store} --apply` mends "
                          "(rebuild-index)\n")
    done = run("recover", store, "--config", CONF)
    assert done.returncode == 1
    assert done.stderr == (f"recover left 728 problems, 0 warnings that `rmqtool doctor {store} --apply` mends "
                           "(rebuild-index)\n")


def test_doctor_refuses_a_file_and_a_missing_path_in_one_line(tmp_path):
    for target in (tmp_path / "nothing", Path(CONF)):
        out = run("doctor", target)
        assert out.returncode == 2 and out.stdout == "" and len(out.stderr.splitlines()) == 1, out.stderr


def test_a_zeroed_last_segment_is_named_not_only_its_consequences(tmp_path):
    """A zeroed last segment showed only as queue entries past the end; the segment itself was never named."""
    store = damaged_stores(tmp_path, ["last-zeroed"])["last-zeroed"]
    last = f"{2 * SEG:020d}"
    report = verify_path(store, CONF)
    past = [f for f in report.findings if f.kind == "entry-past-log-end"]
    assert past and all(f.reason.endswith(f": segment {last} holds no record there (lost)") for f in past)
    _code, plan = doctor(store)
    step = plan["steps"][0]
    assert (step["action"], Path(step["target"]).name, step["recordsLost"]) == ("recover", last, 43)
    assert f"the records of segment {last} there were lost" in step["reason"]


@pytest.mark.parametrize("store", ["basic", "v5-rocksdb", "ha/sync/master"])
def test_doctor_finds_the_stores_the_java_broker_wrote_healthy_and_changes_nothing(golden_basic, store):
    """The 4.9.7 store, the 5.3.3 RocksDB store (checked; rmqtool never writes it) and an HA master."""
    root = golden_basic.parent / store
    conf = next(p for p in (root / "broker.conf", root.parent / "broker.conf") if p.is_file())
    before = files(root / "store")
    out = run("doctor", root / "store", "--config", conf, "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads(out.stdout)
    assert (doc["status"], doc["problems"], doc["steps"]) == ("healthy", 0, [])
    assert files(root / "store") == before and not (root / "store" / "lost").exists()


def test_doctor_apply_refuses_a_store_a_running_broker_holds_and_changes_nothing(tmp_path):
    from lockholder import lock_held_elsewhere

    store = damaged_stores(tmp_path, ["crc-mid"])["crc-mid"]
    before = files(store)
    with lock_held_elsewhere(store / "lock"):
        out = run("doctor", store, "--config", CONF, "--apply", "--json")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith(f"rmqtool: error: store {store} is locked by process "), out.stderr
    assert out.stderr.endswith(" (a running broker?): nothing changed\n")
    assert files(store) == before and not (store / "lost").exists()


def test_doctor_after_recover_thorough_filled_a_middle_segment_renumbers_the_records_after_it_and_converges(tmp_path):
    """After `recover --thorough` filled a missing middle segment, every `doctor --apply` planned rebuild-queues and
    never converged: the records after the hole keep the queue offsets they were written with, which skip those
    lost in the hole, and a rebuilt queue numbers its entries by position. The doctor cuts the log where the
    records after the hole start and appends them again, numbered on."""
    store = fixture_copy(tmp_path)
    corrupt(store, f"commitlog/{SEG:020d}", "delete")
    assert run("recover", store, "--config", CONF, "--thorough").returncode == 1
    shutil.move(store / "lost", tmp_path / "kept-by-recover")  # lost/ below holds only what the doctor keeps
    report = verify_path(store, CONF)
    assert report.by_kind() == {"entry-mismatch": 42, "queue-offset-gap": 7, "record-without-entry": 42}
    gaps = [f for f in report.findings if f.kind == "queue-offset-gap"]
    assert [(Path(f.file).relative_to(store / "consumequeue").as_posix(), f.offset) for f in gaps] == [
        ("AuditLogTopic/2", 57 * 20), ("OrderTopic/0", 15 * 20), ("OrderTopic/1", 15 * 20), ("OrderTopic/2", 14 * 20),
        ("OrderTopic/3", 14 * 20), ("PaymentTopic/0", 28 * 20), ("PaymentTopic/1", 30 * 20)]
    assert gaps[0].reason.startswith("queue offsets 57..114 have no record: the record at 131702 (queue offset 115) "
                                     "follows the queue's record 56 in the log")
    before, kept = files(store), messages(store)
    offsets = {r["msgId"]: r["commitLogOffset"] for r in decoded(store)}
    code, plan = doctor(store)
    assert (code, plan["status"], plan["problems"]) == (1, "plan", 91)
    assert [(s["action"], Path(s["target"]).name, s["at"], s["mends"], s["recordsLost"], s["recordsKept"])
            for s in plan["steps"]] == [("cut-and-repack", f"{2 * SEG:020d}", 2 * SEG, 91, 0, 45),
                                        ("rebuild-queues", "consumequeue", None, 0, 0, 0),
                                        ("rebuild-index", "index", None, 0, 0, 0),
                                        ("reset-checkpoint", "checkpoint", None, 0, 0, 0)]
    code, done = doctor(store, "--apply")
    assert code == 0 and done["after"] == {"problems": 0, "warnings": 0, "byKind": {}}
    assert doctor(store)[1]["status"] == "healthy"
    assert messages(store) == kept
    assert {r["msgId"]: r["commitLogOffset"] for r in decoded(store)} == offsets  # appended again where they were
    queued = {(r["topic"], r["queueId"], r["queueOffset"]) for r in decoded(store) if r["topic"] == "AuditLogTopic"}
    assert {q for t, i, q in queued if i == 2} == set(range(len([1 for _, i, _ in queued if i == 2])))
    assert restored_from_lost(store, before) == before


def decoded(root: Path) -> list[dict]:
    out = run("decode", "commitlog", root, "--config", CONF, "--jsonl", "--body", "none")
    return [r for r in map(json.loads, out.stdout.splitlines()) if "msgId" in r]
