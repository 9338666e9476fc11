"""Each structure x each damage, through decode, verify, recover --dry-run, recover and salvage, with
the exact loss and the exact file named (after LevelDB's corruption_test: one `corrupt` fixture,
exact bounds). Expectations come from the undamaged fixture store, read before the damage."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from cli_helpers import fixture_copy
from damage import corrupt

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import open_reader
from rmqtool.errors import RmqError
from rmqtool.ops.export import export_store
from rmqtool.ops.log_rows import log_rows
from rmqtool.ops.recovery import apply_recovery, plan_recovery
from rmqtool.ops.verify import verify_path
from rmqtool.report import ERROR, Finding
from rmqtool.structures import consumequeue, index
from rmqtool.structures.commitlog import message

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "store"
CONF = ROOT / "fixtures" / "broker.conf"
SEG = 65536
MIDDLE = f"{SEG:020d}"  # the fixture has three segments: 0, 65536, 131072
LAST = f"{2 * SEG:020d}"
QUEUE = Path("consumequeue") / "OrderTopic" / "0" / f"{0:020d}"
INDEX = Path("index") / "20231114221320001"


def records(root: Path) -> list[dict]:
    out: list[dict] = []
    for item in log_rows(open_reader(root, CONF)):
        if isinstance(item, pa.RecordBatch):
            out += item.select(["commitLogOffset", "storeSize", "sysFlag"]).to_pylist()
    return out


def findings(root: Path) -> list[Finding]:
    return [f for f in log_rows(open_reader(root, CONF)) if isinstance(f, Finding)]


ORIGINAL = records(FIXTURE)
IN_MIDDLE = next(r for r in ORIGINAL if r["commitLogOffset"] > SEG + 5000)  # a record well inside segment 1
TAIL = ORIGINAL[-1]["commitLogOffset"] + ORIGINAL[-1]["storeSize"] - 2 * SEG  # the data end in the last segment


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return fixture_copy(tmp_path)


def cfg() -> StoreConfig:
    return StoreConfig.from_file(CONF)[0]


def errors_named(fs: list[Finding]) -> set[str]:
    return {Path(f.file).name for f in fs if f.severity == ERROR}


# -- commitlog -------------------------------------------------------------------------------------
BODY_AT = IN_MIDDLE["commitLogOffset"] - SEG + message.header_len(IN_MIDDLE["sysFlag"])


@pytest.mark.parametrize("damage, at, nbytes", [("flip", BODY_AT, 0), ("zero", BODY_AT - 20, 40)])
def test_commitlog_record_damage_loses_that_record_to_readers_and_the_rest_to_recovery(store, damage, at, nbytes):
    seg = corrupt(store, Path("commitlog") / MIDDLE, damage, at, nbytes)
    bad = IN_MIDDLE["commitLogOffset"]
    fs = findings(store)
    assert [(Path(f.file).name, f.offset, f.bytes) for f in fs if f.severity == ERROR] == [(MIDDLE, bad, IN_MIDDLE[
        "storeSize"])]
    assert [r["commitLogOffset"] for r in records(store)] == [r["commitLogOffset"] for r in ORIGINAL
                                                              if r["commitLogOffset"] != bad]
    assert MIDDLE in errors_named(verify_path(store, CONF).findings)
    salvaged = export_store(open_reader(store, CONF), store.parent / "s.jsonl", "jsonl")
    assert salvaged.messages == len(ORIGINAL) - 1 and salvaged.corrupt_regions == 1
    plan = plan_recovery(store, cfg())
    later = [r for r in ORIGINAL if r["commitLogOffset"] > bad]
    still_a_message = damage == "flip"  # a zeroed header is no message any more: it is cut, not dropped
    assert plan.refused is None and plan.end == bad and plan.dropped_count == len(later) + still_a_message
    assert any(c.file == str(seg) and c.offset == bad and c.kind == "cut" for c in plan.cuts)
    apply_recovery(store, cfg(), plan)
    assert records(store) == [r for r in ORIGINAL if r["commitLogOffset"] < bad]
    assert not errors_named(verify_path(store, CONF).findings)


def test_commitlog_truncated_segment_is_named_and_refused_by_recovery(store):
    corrupt(store, Path("commitlog") / MIDDLE, "truncate", 30000)
    fs = findings(store)
    assert any(Path(f.file).name == MIDDLE and f.kind == "segment-size" for f in fs)
    kept = [r for r in records(store)]
    assert all(r in ORIGINAL for r in kept) and not any(SEG + 30000 <= r["commitLogOffset"] < 2 * SEG for r in kept)
    assert MIDDLE in errors_named(verify_path(store, CONF).findings)
    plan = plan_recovery(store, cfg())
    assert plan.refused and MIDDLE in plan.refused
    with pytest.raises(RmqError):
        apply_recovery(store, cfg(), plan)


def test_commitlog_deleted_segment_is_named_by_its_own_file(store):
    corrupt(store, Path("commitlog") / MIDDLE, "delete")
    missing = [f for f in findings(store) if f.kind == "missing-segment"]
    assert [(Path(f.file).name, f.offset, f.bytes) for f in missing] == [(MIDDLE, SEG, SEG)]
    assert records(store) == [r for r in ORIGINAL if not SEG <= r["commitLogOffset"] < 2 * SEG]
    assert MIDDLE in errors_named(verify_path(store, CONF).findings)
    plan = plan_recovery(store, cfg())
    assert plan.refused and MIDDLE in plan.refused and "--thorough" in plan.refused
    salvaged = export_store(open_reader(store, CONF), store.parent / "s.jsonl", "jsonl")
    assert salvaged.messages == len(records(store)) and salvaged.corrupt_regions == 1


def test_commitlog_garbage_tail_is_cut_by_recovery_and_loses_nothing(store):
    seg = corrupt(store, Path("commitlog") / LAST, "garbage", TAIL, 64)
    fs = [f for f in findings(store) if f.severity == ERROR]
    assert [(Path(f.file).name, f.offset, f.bytes) for f in fs] == [(LAST, 2 * SEG + TAIL, 64)]
    assert records(store) == ORIGINAL
    plan = plan_recovery(store, cfg())
    assert plan.end == 2 * SEG + TAIL and plan.dropped_count == 0
    assert [(c.file, c.offset, c.bytes) for c in plan.cuts if c.file == str(seg)] == [(str(seg), 2 * SEG + TAIL, 64)]
    apply_recovery(store, cfg(), plan)
    assert records(store) == ORIGINAL and not findings(store)


# -- consume queue ---------------------------------------------------------------------------------
def written() -> int:
    """Entries of the queue before the damage."""
    return consumequeue.written_count(consumequeue.decode_entries((FIXTURE / QUEUE).read_bytes()))


@pytest.mark.parametrize("damage, at, nbytes", [
    ("flip", 5 * consumequeue.ENTRY_LEN + 19, 0),  # the tagsCode of entry 5
    ("zero", 5 * consumequeue.ENTRY_LEN, 5 * consumequeue.ENTRY_LEN),  # entries 5..9
    ("delete", 0, 0),
])
def test_consume_queue_damage_is_named_by_its_queue(store, damage, at, nbytes):
    corrupt(store, QUEUE, damage, at, nbytes)
    report = verify_path(store, CONF)
    bad = [f for f in report.findings if f.severity == ERROR]
    assert bad and {f.file for f in bad} == {str(store / QUEUE.parent)}
    total = written()
    without = {"flip": 1, "zero": total - 5, "delete": total}[damage]  # by the broker's rule a hole ends the queue
    assert sum(f.kind == "record-without-entry" for f in bad) == without
    assert sum(f.kind == "entry-mismatch" for f in bad) == (damage == "flip")
    assert len(bad) == without + (damage == "flip")
    assert records(store) == ORIGINAL and not findings(store)  # the log itself is intact
    assert plan_recovery(store, cfg(), count_dispatch=False).refused is None


def test_consume_queue_truncated_to_a_wrong_size_is_refused_as_the_broker_refuses(store):
    corrupt(store, QUEUE, "truncate", 1000)
    plan = plan_recovery(store, cfg())
    assert plan.refused and QUEUE.parent.parent.name in plan.refused


# -- index -------------------------------------------------------------------------------------
ENTRIES_AT = index.HEADER_LEN + 64 * index.SLOT_LEN


def test_index_slot_table_zeroed_leaves_keys_unreachable_named_by_the_file(store):
    corrupt(store, INDEX, "zero", index.HEADER_LEN, 64 * index.SLOT_LEN)
    report = verify_path(store, CONF)
    kinds = {f.kind for f in report.findings if f.severity == ERROR}
    assert kinds == {"index-entry-unreachable", "key-not-indexed"}
    assert {Path(f.file).name for f in report.findings if f.kind == "index-entry-unreachable"} == {INDEX.name}
    assert records(store) == ORIGINAL


def test_index_deleted_file_loses_exactly_its_keys(store):
    count = int(index.decode_header((FIXTURE / INDEX).read_bytes())["indexCount"]) - index.FIRST_INDEX
    corrupt(store, INDEX, "delete")
    report = verify_path(store, CONF)
    assert [f.kind for f in report.findings if f.severity == ERROR] and all(
        f.kind == "key-not-indexed" for f in report.findings if f.severity == ERROR)
    capped = [f for f in report.findings if f.kind == "key-not-indexed"]
    listed = sum("more like" not in f.reason for f in capped)
    more = sum(int(f.reason.split()[0]) for f in capped if "more like" in f.reason)
    assert listed + more == count


# -- checkpoint --------------------------------------------------------------------------------
def test_checkpoint_garbage_in_its_times_is_a_warning_not_a_loss(store):
    corrupt(store, "checkpoint", "garbage", 0, 8)  # physicMsgTimestamp far in the future
    report = verify_path(store, CONF)
    assert [(f.kind, f.severity) for f in report.findings] == [("checkpoint-ahead", "warning")]
    assert records(store) == ORIGINAL


def test_checkpoint_truncated_is_one_line_error(store):
    corrupt(store, "checkpoint", "truncate", 10)
    with pytest.raises(RmqError, match="too small for a checkpoint"):
        open_reader(store, CONF).checkpoint()
