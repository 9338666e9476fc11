"""`recover --truncate-to`: a slave ahead of its master (the real broker pair of golden/ha/ahead) cut back to the
master's end, everything cut kept under lost/, refused off a record boundary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run, writable_copy

from rmqtool.files.lost import RANGE_SEP

MASTER_END = 249824  # ha/ahead: the master's max offset; the slave holds sync-phase records past it
FIRST_AFTER = 250080  # the slave's next record boundary past the master's end


@pytest.fixture(scope="module")
def ha(golden_basic: Path) -> Path:
    return golden_basic.parent / "ha" / "ahead"


@pytest.fixture
def slave(ha: Path, tmp_path: Path) -> Path:
    return writable_copy(ha / "slave" / "store", tmp_path / "slave")


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            and p.name != "lock" and "lost" not in p.relative_to(root).parts}


def _truncate(slave: Path, ha: Path, offset: int, *extra: str):
    return run("recover", slave, "--config", ha / "slave" / "broker.conf", "--truncate-to", offset, *extra)


def test_off_a_record_boundary_is_refused_naming_the_nearest_boundaries(slave, ha):
    before = _tree(slave)
    out = _truncate(slave, ha, MASTER_END + 1)
    assert out.returncode == 2
    assert f"is not a record boundary: the nearest are {MASTER_END} and {FIRST_AFTER}" in " ".join(out.stdout.split())
    assert _tree(slave) == before and not (slave / "lost").exists()


@pytest.mark.parametrize("offset", [10_000_000, 1000])
def test_outside_the_log_is_refused(slave, ha, offset):
    out = _truncate(slave, ha, offset, "--json")
    assert out.returncode == 2
    assert "is outside the log: it starts at 196608 and recovery ends it at 324301" in json.loads(out.stdout)["refused"]


def test_dry_run_names_the_cut_and_changes_nothing(slave, ha):
    before = _tree(slave)
    out = _truncate(slave, ha, MASTER_END, "--dry-run", "--json")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert (plan["truncateTo"], plan["recoveryPoint"]["offset"], plan["messagesLost"]) == (MASTER_END, MASTER_END, 100)
    assert plan["queueEntriesDropped"] == 100 and plan["indexFilesDropped"] == 1 and plan["indexKeysAdded"] == 54
    assert _tree(slave) == before and not (slave / "lost").exists()


def test_a_slave_ahead_of_its_master_is_cut_to_the_masters_bytes(slave, ha):
    out = _truncate(slave, ha, MASTER_END)
    assert out.returncode == 0, out.stdout + out.stderr
    master_log, slave_log = ha / "master" / "store" / "commitlog", slave / "commitlog"
    assert sorted(p.name for p in slave_log.iterdir()) == ["00000000000000196608"]
    kept = MASTER_END - 196608
    assert (slave_log / "00000000000000196608").read_bytes()[:kept] == \
        (master_log / "00000000000000196608").read_bytes()[:kept]
    assert not any((slave_log / "00000000000000196608").read_bytes()[kept:])
    verify = run("verify", slave, "--config", ha / "slave" / "broker.conf", "--json")
    assert verify.returncode == 0, verify.stdout
    report = json.loads(verify.stdout)
    assert (report["messages"], report["problems"]) == (54, 0)


def test_what_remains_and_lost_give_back_the_original_byte_for_byte(slave, ha):
    original = _tree(slave)
    assert _truncate(slave, ha, MASTER_END).returncode == 0
    (lost,) = (slave / "lost").iterdir()
    rebuilt = {name: data for name, data in _tree(slave).items() if not name.startswith("index/")}
    for p in sorted(lost.rglob("*")):
        if not p.is_file() or p.name == "plan.json":
            continue
        name = str(p.relative_to(lost))
        if RANGE_SEP in p.name:
            file, start = name.rsplit(RANGE_SEP, 1)
            data = bytearray(rebuilt[file])
            data[int(start) : int(start) + p.stat().st_size] = p.read_bytes()
            rebuilt[file] = bytes(data)
        else:
            rebuilt[name] = p.read_bytes()
    assert {k: v for k, v in rebuilt.items() if k != "checkpoint"} == \
        {k: v for k, v in original.items() if k != "checkpoint"}
    assert rebuilt["checkpoint"] == original["checkpoint"]  # the old checkpoint is kept in lost/ too


def test_the_checkpoint_names_no_time_past_the_new_end(slave, ha):
    assert _truncate(slave, ha, MASTER_END).returncode == 0
    cp = json.loads(run("decode", "checkpoint", slave, "--json").stdout)
    last = json.loads(run("decode", "commitlog", slave, "--json", "--body", "none").stdout)["messages"][-1]
    assert last["commitLogOffset"] + last["storeSize"] == MASTER_END
    assert cp["physicMsgTimestamp"] == cp["logicsMsgTimestamp"] == last["storeTimestamp"]
    assert cp["indexMsgTimestamp"] <= last["storeTimestamp"]


def test_keys_of_the_records_kept_are_still_found_after_their_index_file_went(golden_basic, golden_expected,
                                                                               tmp_path):
    store = writable_copy(golden_basic / "store", tmp_path / "store")
    conf = golden_basic / "broker.conf"
    middle = golden_expected["messages"][len(golden_expected["messages"]) // 2]
    out = run("recover", store, "--config", conf, "--truncate-to", middle["commitLogOffset"], "--json")
    assert out.returncode == 0, out.stdout
    assert json.loads(out.stdout)["indexFilesDropped"] >= 1
    kept = [m for m in golden_expected["messages"] if m["commitLogOffset"] < middle["commitLogOffset"]]
    verify = json.loads(run("verify", store, "--config", conf, "--json").stdout)
    assert (verify["messages"], verify["problems"]) == (len(kept), 0)
    probe = kept[-1]
    key = probe["properties"]["KEYS"].split(" ")[0]
    found = run("query", store, "--config", conf, "--topic", probe["topic"], "--key", key, "--json")
    assert probe["commitLogOffset"] in [m["commitLogOffset"] for m in json.loads(found.stdout)["messages"]]


def test_diff_finds_the_divergence_and_after_the_cut_the_pair_is_identical(slave, ha):
    before = run("diff", ha / "master" / "store", slave, "--json")
    assert before.returncode == 1 and json.loads(before.stdout)["common"]["divergesAt"] == MASTER_END
    assert _truncate(slave, ha, MASTER_END).returncode == 0
    after = run("diff", ha / "master" / "store", slave, "--json")
    assert after.returncode == 0, after.stdout
