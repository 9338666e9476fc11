"""query, recover, verify, salvage, clean and crash rounds, on stores damaged in each way."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from cli_helpers import fixture_copy, run
from lockholder import lock_held_elsewhere

from rmqtool.engine.config import StoreConfig
from rmqtool.ops.recovery import apply_recovery, plan_recovery
from rmqtool.ops.verify import verify_path
from rmqtool.structures.commitlog import message, msgid

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "store"
CONF = str(ROOT / "fixtures" / "broker.conf")
SEG = 65536


def cfg() -> StoreConfig:
    return StoreConfig.from_file(CONF)[0]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return fixture_copy(tmp_path)


def messages(root: Path) -> list[dict]:
    out = run("decode", "commitlog", str(root), "--config", CONF, "--jsonl")
    return [m for m in (json.loads(line) for line in out.stdout.splitlines()) if "error" not in m]


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file()}


def flip(path: Path, offset: int) -> None:
    b = bytearray(path.read_bytes())
    b[offset] ^= 0xFF
    path.write_bytes(bytes(b))


def last_segment_record(root: Path) -> dict:
    return next(m for m in messages(root) if m["commitLogOffset"] >= 2 * SEG and m["sysFlag"] & 0x30 == 0
                and len(m["body"]) > 20)


# ---- query --------------------------------------------------------------------------------------

def test_query_msgid_returns_the_message_and_checks_its_host(store):
    m = messages(store)[7]
    out = run("query", str(store), "--config", CONF, "--msg-id", m["msgId"], "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["messages"][0] == m
    host, offset = msgid.decode(m["msgId"])
    other = msgid.create(host._replace(port=host.port + 1), offset)
    out = run("query", str(store), "--config", CONF, "--msg-id", other)
    assert out.returncode == 3 and "names broker" in out.stderr


@pytest.mark.parametrize(("args", "code"), [
    (["--msg-id", "XYZ"], 2),
    (["--msg-id", "C0A80001" + "00002A9F" + "7FFFFFFFFFFFFFF0"], 3),
    (["--phy-offset", "3"], 3),
    (["--topic", "Nope", "--queue", "0", "--queue-offset", "0"], 3),
    (["--topic", "OrderTopic", "--queue", "0", "--queue-offset", "99999"], 3),
    (["--topic", "OrderTopic", "--key", "no-such-key"], 0),
    (["--topic", "OrderTopic"], 2),
])
def test_query_bad_input_is_2_not_found_is_3_and_an_empty_search_is_0(store, args, code):
    out = run("query", str(store), "--config", CONF, *args)
    assert out.returncode == code, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_query_key_unique_key_and_queue_offset(store):
    msgs = messages(store)
    keyed = next(m for m in msgs if "KEYS" in m["properties"] and m["tagsCode"] is not None)
    word = keyed["properties"]["KEYS"].split()[0]
    want = sorted(m["commitLogOffset"] for m in msgs if m["topic"] == keyed["topic"]
                  and word in m["properties"].get("KEYS", "").split())
    out = run("query", str(store), "--config", CONF, "--topic", keyed["topic"], "--key", word, "--json")
    assert [m["commitLogOffset"] for m in json.loads(out.stdout)["messages"]] == want
    uniq = keyed["properties"]["UNIQ_KEY"]
    out = run("query", str(store), "--config", CONF, "--topic", keyed["topic"], "--unique-key", uniq, "--json")
    assert [m["commitLogOffset"] for m in json.loads(out.stdout)["messages"]] == [keyed["commitLogOffset"]]
    out = run("query", str(store), "--config", CONF, "--topic", keyed["topic"], "--queue", str(keyed["queueId"]),
              "--queue-offset", str(keyed["queueOffset"]), "--json")
    assert json.loads(out.stdout)["messages"][0]["commitLogOffset"] == keyed["commitLogOffset"]


def test_query_key_scan_agrees_with_index(store):
    a = run("query", str(store), "--config", CONF, "--topic", "OrderTopic", "--key", "shared-2", "--json")
    b = run("query", str(store), "--config", CONF, "--topic", "OrderTopic", "--key", "shared-2", "--scan", "--json")
    assert a.returncode == b.returncode == 0 and json.loads(a.stdout) == json.loads(b.stdout)


def test_query_time_binary_search_ignores_file_times(store):
    msgs = [m for m in messages(store) if m["topic"] == "OrderTopic" and m["queueId"] == 0]
    qdir = store / "consumequeue" / "OrderTopic" / "0"
    for p in qdir.iterdir():
        os.utime(p, (0, 0))
    third = msgs[3]["storeTimestamp"]
    first_at_third = next(m["queueOffset"] for m in msgs if m["storeTimestamp"] >= third)
    for probe, want in [(0, 0), (third, first_at_third), (msgs[-1]["storeTimestamp"] + 1, msgs[-1]["queueOffset"] + 1)]:
        out = run("query", str(store), "--config", CONF, "--topic", "OrderTopic", "--queue", "0", "--time", str(probe),
                  "--json")
        assert json.loads(out.stdout)["queueOffset"] == want


# ---- verify -------------------------------------------------------------------------------------

def test_verify_clean_stores_find_nothing(golden_basic):
    assert verify_path(FIXTURE, CONF).problems == 0
    assert verify_path(golden_basic / "store", golden_basic / "broker.conf").problems == 0


def test_verify_reports_each_corruption_with_file_and_offset(store):
    rec = last_segment_record(store)
    seg = store / "commitlog" / f"{2 * SEG:020d}"
    flip(seg, rec["commitLogOffset"] - 2 * SEG + 90)  # a body byte
    cq = store / "consumequeue" / "OrderTopic" / "0" / f"{0:020d}"
    flip(cq, 20 * 2 + 11)  # the size of entry 2
    shutil.rmtree(store / "consumequeue" / "PaymentTopic" / "1")
    out = run("verify", str(store), "--config", CONF, "--json")
    assert out.returncode == 1
    found = json.loads(out.stdout)["findings"]
    assert any(f["file"] == str(seg) and f["offset"] == rec["commitLogOffset"] and "CRC" in f["reason"] for f in found)
    assert any(f["file"].endswith("OrderTopic/0") and f["offset"] == 40 for f in found)
    assert any(f["file"].endswith("PaymentTopic/1") and "no consume-queue entry" in f["reason"] for f in found)


def test_verify_and_decode_survive_bit_flips_truncation_and_zeroed_pages(store):
    seg0 = store / "commitlog" / f"{0:020d}"
    b = bytearray(seg0.read_bytes())
    b[8192:12288] = bytes(4096)  # a zeroed page inside the data
    seg0.write_bytes(bytes(b))
    seg1 = store / "commitlog" / f"{SEG:020d}"
    seg1.write_bytes(seg1.read_bytes()[:40000])  # truncated segment
    idx = sorted((store / "index").iterdir())[0]
    flip(idx, 40 + 16 * 4 + 20 * 3 + 15)  # an index entry's phyOffset
    for args in (["verify", str(store), "--config", CONF, "--json"], ["decode", "commitlog", str(store), "--jsonl"]):
        out = run(*args)
        assert out.returncode == 1 and "Traceback" not in out.stderr
    found = json.loads(run("verify", str(store), "--config", CONF, "--json").stdout)["findings"]
    assert any(f["file"] == str(seg0) and 8192 <= f["offset"] < 12288 for f in found)
    assert any((f["file"] == str(seg1) and "40000" in f["reason"]) or f["file"] == str(seg1) for f in found)
    assert any(f["file"] == str(idx) for f in found)


# ---- recover ------------------------------------------------------------------------------------

def test_clean_store_recovers_to_itself(store):
    before = digest(store)
    plan = plan_recovery(store, cfg())
    assert plan.mode == "clean" and not plan.cuts and not plan.deleted and plan.end == 151686
    apply_recovery(store, cfg(), plan)
    after = digest(store)
    assert {k: v for k, v in after.items() if k != "checkpoint"} == {k: v for k, v in before.items()
                                                                   if k != "checkpoint"}


def test_crc_failure_in_last_segments_cuts_there_and_drops_queue_entries(store):
    rec = last_segment_record(store)
    flip(store / "commitlog" / f"{2 * SEG:020d}", rec["commitLogOffset"] - 2 * SEG + 90)
    before = digest(store)
    out = run("recover", str(store), "--config", CONF, "--dry-run", "--json")
    assert out.returncode == 0 and digest(store) == before  # a dry run changes nothing
    doc = json.loads(out.stdout)
    assert doc["commitlog"]["end"] == rec["commitLogOffset"] and doc["commitlog"]["stop"] == "body CRC mismatch"
    later = [m for m in messages(store) if m["commitLogOffset"] > rec["commitLogOffset"]]
    assert doc["droppedMessageCount"] == len(later) + 1
    assert doc["droppedMessages"][0]["msgId"] == rec["msgId"]
    out = run("recover", str(store), "--config", CONF, "--json")
    assert json.loads(out.stdout)["commitlog"] == doc["commitlog"]
    assert [m["commitLogOffset"] for m in messages(store)][-1] < rec["commitLogOffset"]
    assert verify_path(store, CONF).problems == 0
    again = json.loads(run("recover", str(store), "--config", CONF, "--dry-run", "--json").stdout)
    assert not again["truncated"] and not again["deletedFiles"] and not again["consumeQueues"]


def test_clean_recovery_checks_only_the_last_three_segments(tmp_path):
    """The broker's blind spot: a bad record in an older segment survives a clean-shutdown recovery."""
    src = tmp_path / "src"
    from rmqtool.engine.message_store import MessageStore
    from rmqtool.structures.commitlog.hosts import parse_host
    from rmqtool.structures.commitlog.message import Message

    host = parse_host("1.2.3.4:5")
    with MessageStore(src, cfg()) as st:
        for i in range(1200):
            st.put_message(Message(topic="T", body=b"x" * 200, born_host=host, store_host=host, queue_id=i % 2))
    segs = sorted((src / "commitlog").iterdir())
    assert len(segs) >= 4
    flip(segs[0], 200)
    plan = plan_recovery(src, cfg())
    assert plan.mode == "clean" and not plan.cuts and plan.start_segment == segs[-3].name


def test_crash_recovery_rebuilds_a_lost_queue_and_newer_index_files(store):
    shutil.rmtree(store / "consumequeue" / "OrderTopic" / "1")
    (store / "abort").touch()
    plan = plan_recovery(store, cfg())
    assert plan.mode == "crash"
    lost = [q for q in plan.queues if (q.topic, q.queue_id) == ("OrderTopic", 1)]
    assert lost and lost[0].added == len([m for m in messages(store) if m["topic"] == "OrderTopic"
                                          and m["queueId"] == 1 and m["tagsCode"] is not None])
    apply_recovery(store, cfg(), plan)
    assert not (store / "abort").exists()
    for p in (FIXTURE / "consumequeue").rglob("0000*"):
        assert (store / p.relative_to(FIXTURE)).read_bytes() == p.read_bytes()
    assert verify_path(store, CONF).problems == 0


def test_lost_queue_before_clean_shutdown_is_not_rebuilt(store):
    """As the broker: clean recovery does not re-dispatch what a lost queue held; verify shows it."""
    shutil.rmtree(store / "consumequeue" / "OrderTopic" / "1")
    plan = plan_recovery(store, cfg())
    assert not any(q.added for q in plan.queues)
    apply_recovery(store, cfg(), plan)
    assert verify_path(store, CONF).problems > 0


def test_garbage_tail_after_the_log_is_cut_and_zeroed(store):
    seg = store / "commitlog" / f"{2 * SEG:020d}"
    b = bytearray(seg.read_bytes())
    end = 151686 - 2 * SEG
    b[end : end + 100] = os.urandom(100)
    seg.write_bytes(bytes(b))
    plan = plan_recovery(store, cfg())
    assert plan.end == 151686 and plan.cuts[0].offset - int(Path(plan.cuts[0].file).name) == end
    apply_recovery(store, cfg(), plan)
    assert seg.read_bytes()[end : end + 100] == bytes(100)


def test_file_left_half_allocated_by_a_crash_is_removed(store):
    """A writer killed while allocating leaves a temporary file; readers skip it, recovery removes it."""
    for d in ("commitlog", "index"):
        (store / d / ".00000000000000196608.tmp").write_bytes(b"")
    (store / "abort").touch()
    assert verify_path(store, CONF).problems == 0
    apply_recovery(store, cfg(), plan_recovery(store, cfg()))
    assert not [p for p in store.rglob(".*.tmp") if p.relative_to(store).parts[0] != "lost"]  # kept in lost/ only
    assert verify_path(store, CONF).problems == 0


def test_wrong_size_queue_file_is_refused_and_nothing_changes(store):
    cq = store / "consumequeue" / "OrderTopic" / "0" / f"{0:020d}"
    cq.write_bytes(cq.read_bytes()[:-20])
    before = digest(store)
    out = run("recover", str(store), "--config", CONF)
    assert out.returncode == 2 and "refuses to start" in out.stdout + out.stderr
    assert digest(store) == before


def test_recover_refuses_a_locked_store(store):
    (store / "abort").touch()
    before = digest(store)
    with lock_held_elsewhere(store / "lock"):
        out = run("recover", str(store), "--config", CONF)
    assert out.returncode == 2 and "locked" in out.stderr
    assert digest(store) == before


# ---- salvage and clean ----------------------------------------------------------------------------

def test_salvage_reads_past_a_corrupt_region(store, tmp_path):
    seg = store / "commitlog" / f"{0:020d}"
    b = bytearray(seg.read_bytes())
    b[2000:2100] = os.urandom(100)
    seg.write_bytes(bytes(b))
    out = run("salvage", str(store), "--config", CONF, "--out", str(tmp_path / "s.jsonl"), "--json")
    assert out.returncode == 1, out.stderr  # corruption was met
    got = [json.loads(line)["commitLogOffset"] for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert len(got) >= 416 and max(got) > 150000
    doc = json.loads(out.stdout)
    assert doc["messages"] == len(got) and doc["corruptRegions"] == len(doc["groups"]) == 1
    region = doc["groups"][0]
    assert region["file"] == str(seg) and region["firstOffset"] <= 2000 < region["firstOffset"] + region["bytes"]
    clean = run("salvage", str(ROOT / "fixtures" / "store"), "--config", CONF, "--out", str(tmp_path / "c.jsonl"))
    assert clean.returncode == 0 and "0 corrupt regions" in " ".join(clean.stderr.split())


def test_clean_deletes_expired_segments_and_orphans_only(store):
    for name in (f"{0:020d}", f"{SEG:020d}"):
        os.utime(store / "commitlog" / name, (1_000_000, 1_000_000))
    before = digest(store)
    out = run("clean", str(store), "--config", CONF, "--dry-run", "--json")
    doc = json.loads(out.stdout)
    assert doc["minOffset"] == 2 * SEG and digest(store) == before
    assert {Path(d["file"]).name for d in doc["deletedFiles"]} >= {f"{0:020d}", f"{SEG:020d}"}
    assert run("clean", str(store), "--config", CONF).returncode == 0
    assert sorted(p.name for p in (store / "commitlog").iterdir()) == [f"{2 * SEG:020d}"]
    assert verify_path(store, CONF).problems == 0


# ---- crash rounds ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("flush", "rounds"), [("sync", 3), ("async", 2)])
def test_killed_writers_lose_no_acknowledged_message(flush, rounds):
    from rmqtool.bench.crash import run_crash_rounds

    result = run_crash_rounds(rounds, flush, seed=11)
    assert result["acknowledged"] > 0
    assert result["lost"] == 0 and result["problems"] == 0


def test_a_writer_that_dies_before_acknowledging_is_reported_with_its_error(tmp_path, monkeypatch):
    """A crash round whose writer never started (here: it exits at once) said it "acknowledged nothing within
    60 s", as if the machine were slow, and hid the writer's own error."""
    import random

    from rmqtool.bench import crash

    monkeypatch.setattr(crash, "_WRITER", "import sys; sys.exit('the writer could not open the store')")
    with pytest.raises(RuntimeError, match=r"^the writer exited with code 1 before its first acknowledgement: "
                                           r"the writer could not open the store$"):
        crash.crash_round(tmp_path / "store", "async", random.Random(0))
    assert not (tmp_path / "store").exists()


def test_thorough_rebuilds_what_clean_recovery_leaves_missing(store):
    shutil.rmtree(store / "consumequeue" / "OrderTopic" / "1")
    idx = sorted((store / "index").iterdir())[0]
    idx.unlink()
    out = run("recover", str(store), "--config", CONF, "--thorough", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    added = {(q["topic"], q["queueId"]): q["entriesAdded"] for q in doc["consumeQueues"]}
    assert added[("OrderTopic", 1)] == 32 and doc["index"]["keysAdded"] >= 728
    for p in (FIXTURE / "consumequeue").rglob("0000*"):
        assert (store / p.relative_to(FIXTURE)).read_bytes() == p.read_bytes()
    assert verify_path(store, CONF).problems == 0


def test_a_deleted_middle_segment_is_refused_alike_by_the_plan_and_the_recovery(store):
    hole = store / "commitlog" / f"{SEG:020d}"
    hole.unlink()
    before = digest(store)
    dry = run("recover", str(store), "--config", CONF, "--dry-run", "--json")
    real = run("recover", str(store), "--config", CONF, "--json")
    assert dry.returncode == real.returncode == 2
    plan, done = json.loads(dry.stdout), json.loads(real.stdout)
    assert plan["refused"] == done["refused"] and f"segment {SEG:020d} is missing" in plan["refused"]
    assert "recover --thorough" in plan["refused"]
    assert digest(store) == before  # nothing changed


def test_thorough_recovery_fills_a_deleted_middle_segment_with_a_blank_and_rebuilds(store):
    hole = store / "commitlog" / f"{SEG:020d}"
    hole.unlink()
    plan = json.loads(run("recover", str(store), "--config", CONF, "--thorough", "--dry-run", "--json").stdout)
    assert plan["filledSegments"] == [str(hole)] and not hole.exists()
    done = run("recover", str(store), "--config", CONF, "--thorough", "--json")
    assert done.returncode == 1, done.stderr  # the queues still point into the hole: recover says so
    assert done.stderr.startswith("recover left 91 problems, 0 warnings that `rmqtool doctor ")
    assert done.stderr.endswith(" --apply` mends (cut-and-repack)\n")
    assert json.loads(done.stdout)["filledSegments"] == plan["filledSegments"]
    assert hole.stat().st_size == SEG and hole.read_bytes()[:8] == message.encode_blank(SEG)
    assert not any(hole.read_bytes()[8:])
    rows = [json.loads(line) for line in run("decode", "commitlog", str(store), "--config", CONF, "--jsonl",
                                             "--body", "none").stdout.splitlines()]
    assert rows and all(not SEG <= r["commitLogOffset"] < 2 * SEG for r in rows if "msgId" in r)
    assert not [r for r in rows if r.get("severity") == "error"]  # readers step over the blank segment
    again = json.loads(run("recover", str(store), "--config", CONF, "--dry-run", "--json").stdout)
    assert again["refused"] is None and again["filledSegments"] == []
    # the records lost in the hole leave queue offsets no rebuild renumbers: the doctor appends them again
    mended = run("doctor", str(store), "--config", CONF, "--apply")
    assert mended.returncode == 0, mended.stdout + mended.stderr
    assert "applied: verify now finds 0 problems, 0 warnings" in mended.stdout
