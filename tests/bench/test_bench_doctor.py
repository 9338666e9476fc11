"""`bench doctor` damages one record of a copy of the store, and times verify and doctor --apply on it; the store
it is given is never written."""

from __future__ import annotations

import json

import pytest
from cli_helpers import CONF, fixture_copy, run

from rmqtool.bench.doctor import MENDED, PLAN_APPLIED, accepted_status, damage_middle, log_size
from rmqtool.bench.generate import generate_store
from rmqtool.engine.reader import open_reader
from rmqtool.structures.commitlog import message

KEYS = {"mode", "messages", "bytes", "seconds", "messagesPerSecond", "megabytesPerSecond", "peakRssBytes", "rounds",
        "damage", "verify", "doctorApply", "ratioToVerify", "loadAverage"}
TIMING = {"wallSeconds", "cpuSeconds", "peakRssBytes", "exitCode", "problems", "byKind"}


def test_bench_doctor_finds_and_mends_the_record_it_damaged_in_a_generated_store():
    out = run("bench", "doctor", "--messages", "3000", "--body-size", "50", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert set(doc) == KEYS
    assert (doc["mode"], doc["messages"], doc["rounds"]) == ("doctor", 3000, 1)
    verify, applied = doc["verify"], doc["doctorApply"]
    assert set(verify) == TIMING
    assert set(applied) == TIMING | {"status", "statusAccepted", "steps", "recordsLost", "recordsKept",
                                     "afterProblems"}
    assert (verify["exitCode"], verify["byKind"]["crc-mismatch"]) == (1, 1)
    assert (applied["exitCode"], applied["byKind"]["crc-mismatch"], applied["afterProblems"]) == (0, 1, 0)
    assert applied["statusAccepted"] in (MENDED, PLAN_APPLIED)
    assert applied["steps"][0] == "cut-and-repack" and applied["recordsLost"] == 1
    assert applied["recordsKept"] == 3000 - 1 - doc["damage"]["offset"] * 3000 // doc["bytes"]
    assert doc["bytes"] // 2 <= doc["damage"]["offset"] < doc["damage"]["byte"] < doc["bytes"]
    assert doc["seconds"] == applied["wallSeconds"] and doc["peakRssBytes"] == applied["peakRssBytes"] > 0
    assert set(doc["ratioToVerify"]) == {"wall", "cpu", "peakRss"}


def test_bench_doctor_writes_nothing_into_the_store_it_is_given(tmp_path):
    store = fixture_copy(tmp_path)
    before = {p: (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes()) for p in store.rglob("*") if p.is_file()}
    out = run("bench", "doctor", store, "--config", CONF, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["messages"], doc["doctorApply"]["afterProblems"]) == (420, 0)
    assert {p: (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes()) for p in store.rglob("*")
            if p.is_file()} == before


def test_the_damaged_record_is_the_first_with_a_body_from_the_middle_of_the_log(tmp_path):
    gen = generate_store(tmp_path / "store", 1001, 20, segment_size=1 << 20)
    reader = open_reader(gen.root)
    assert log_size(reader) == (1001, 1001 * gen.record_len)
    damage = damage_middle(reader)
    assert damage.offset == 501 * gen.record_len  # the middle offset falls inside record 500; the next one
    assert isinstance(reader.read_record(damage.offset), message.Corrupt)
    assert all(isinstance(reader.read_record(k * gen.record_len), message.Message) for k in (499, 500, 502))
    twin = generate_store(tmp_path / "twin", 1001, 20, segment_size=1 << 20)
    assert damage_middle(open_reader(twin.root)) == damage  # deterministic
    a, b = ((g.root / "commitlog" / f"{0:020d}").read_bytes() for g in (gen, twin))
    assert a == b


def test_the_doctor_status_accepted_as_mended():
    assert accepted_status({"status": "mended", "applied": True, "after": {"problems": 0}}) == MENDED
    assert accepted_status({"status": "plan", "applied": True, "after": {"problems": 0}}) == PLAN_APPLIED
    assert accepted_status({"status": "plan", "applied": False}) is None
    assert accepted_status({"status": "plan", "applied": True, "after": {"problems": 2}}) is None
    assert accepted_status({"status": "healthy", "applied": False}) is None


def test_a_doctor_that_did_not_mend_fails_the_bench_in_one_line():
    from rmqtool.bench.doctor import Damage, DoctorBenchFailed, _doctor_mended
    from rmqtool.bench.process import CommandRun
    from rmqtool.errors import EXIT_PROBLEM

    left = CommandRun(1.0, 1.0, 1, 1, json.dumps({"status": "plan", "applied": True, "after": {"problems": 3}}),
                      "rmqtool: warning: something\ndoctor: 3 problems left\n")
    with pytest.raises(DoctorBenchFailed) as e:
        _doctor_mended(left, Damage(100, 150))
    assert str(e.value) == ("bench doctor: doctor --apply did not mend the record damaged at 100: exit 1, status "
                            "'plan', applied True: doctor: 3 problems left")
    assert e.value.exit_code == EXIT_PROBLEM
