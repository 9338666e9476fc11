"""Records no broker writes whose body CRC still matches (in 4.9 the CRC covers the body only): a negative
queueId, a queueOffset no broker could have given at that commitlog offset, properties torn by zeros. The scan
(decode, verify, salvage, export) reports each as damage at the record over its storeSize and goes on after it:
decode and export skip exactly that record, verify names it, the doctor plans a cut-and-repack there, and no
rebuild makes a queue of it. The broker's walk (recovery) still takes it, as checkMessageAndReturnSize does."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from cli_helpers import CONF, FIXTURE, fixture_copy, run
from damage import corrupt

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import open_reader
from rmqtool.ops.export import export_store
from rmqtool.ops.log_rows import log_rows
from rmqtool.ops.recovery import plan_recovery
from rmqtool.ops.salvage import salvage_into
from rmqtool.ops.verify import verify_path
from rmqtool.report import COMMITLOG, ERROR, Finding
from rmqtool.structures.commitlog import impossible, kernels, message, sysflag
from rmqtool.structures.commitlog.crc import body_crc
from rmqtool.structures.commitlog.hosts import parse_host
from rmqtool.structures.commitlog.scan import scan_buffer
from rmqtool.structures.commitlog.walker import Rows, walk_on
from rmqtool.structures.structure import CUT_AND_REPACK

SEG = 65536
MIDDLE = Path("commitlog") / f"{SEG:020d}"
TORN = 60  # the fuzz run's torn write: the last 60 bytes of a record zeroed


def records(root: Path) -> list[dict]:
    out: list[dict] = []
    for item in log_rows(open_reader(root, CONF)):
        if isinstance(item, pa.RecordBatch):
            out += item.select(["commitLogOffset", "storeSize", "queueId", "queueOffset"]).to_pylist()
    return out


def findings(root: Path) -> list[Finding]:
    return [f for f in log_rows(open_reader(root, CONF)) if isinstance(f, Finding)]


ORIGINAL = records(FIXTURE)
_SEGMENT = (FIXTURE / MIDDLE).read_bytes()
# a record well inside the middle segment whose properties are longer than the torn bytes
VICTIM = next(r for r in ORIGINAL if r["commitLogOffset"] > SEG + 3000 and len(message.decode(
    _SEGMENT, r["commitLogOffset"] - SEG).properties_string.encode()) > TORN + 10)
AT, SIZE = VICTIM["commitLogOffset"], VICTIM["storeSize"]
POS = AT - SEG  # within the segment file
PROPS_LEN = len(message.decode(_SEGMENT, POS).properties_string.encode())
LEAST_IMPOSSIBLE = AT // message.MIN_RECORD_LEN + 1  # the first queueOffset no broker gives a record at AT
DAMAGE = {  # name -> (bytes written at a field of the victim, kind, reason)
    "queueId reads -20": (message.QUEUE_ID_OFFSET, struct.pack(">i", -20), impossible.NEGATIVE_QUEUE_ID,
                          "queueId -20 is negative: no broker writes it"),
    "queueOffset reads 2^63": (message.QUEUE_OFFSET_OFFSET, (1 << 63).to_bytes(8, "big"),
                               impossible.IMPOSSIBLE_QUEUE_OFFSET,
                               "queueOffset -9223372036854775808 is negative: no broker writes it"),
    "queueOffset past what the log before it holds": (
        message.QUEUE_OFFSET_OFFSET, struct.pack(">q", LEAST_IMPOSSIBLE), impossible.IMPOSSIBLE_QUEUE_OFFSET,
        f"queueOffset {LEAST_IMPOSSIBLE} is impossible at commitlog offset {AT}: the {LEAST_IMPOSSIBLE} records "
        f"before it in its queue take at least {LEAST_IMPOSSIBLE} x {message.MIN_RECORD_LEN} bytes before it (at "
        f"most queueOffset {LEAST_IMPOSSIBLE - 1} there)"),
    "last 60 bytes of its properties zeroed": (
        SIZE - TORN, bytes(TORN), impossible.TORN_PROPERTIES,
        f"properties torn: NUL bytes at {AT + SIZE - TORN} (byte {PROPS_LEN - TORN} of {PROPS_LEN}, {TORN} in all): "
        "no producer writes them, and the body CRC does not cover the properties"),
}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return fixture_copy(tmp_path)


def damaged(store: Path, name: str) -> tuple[str, str]:
    """The victim damaged as `name` says; its (kind, reason)."""
    field, data, kind, reason = DAMAGE[name]
    corrupt(store, MIDDLE, "write", POS + field, data=data)
    return kind, reason


def test_victim_properties_are_longer_than_the_torn_bytes():
    buf = _SEGMENT
    assert struct.unpack_from(">h", buf, POS + SIZE - PROPS_LEN - message.PROPERTIES_LEN_LEN)[0] == PROPS_LEN > TORN


@pytest.mark.parametrize("name", DAMAGE)
def test_record_no_broker_writes_is_damage_and_skipped_by_decode_and_export(store, name):
    kind, reason = damaged(store, name)
    seg = str(store / MIDDLE)
    assert [(f.file, f.offset, f.bytes, f.kind, f.reason, f.severity) for f in findings(store)] == [
        (seg, AT, SIZE, kind, reason, ERROR)]
    assert records(store) == [r for r in ORIGINAL if r["commitLogOffset"] != AT]  # the walk goes on after it
    exported = export_store(open_reader(store, CONF), store.parent / "out.jsonl", "jsonl")
    assert exported.messages == len(ORIGINAL) - 1
    lines = [json.loads(line) for line in (store.parent / "out.jsonl").read_text().splitlines()]
    assert AT not in {row["commitLogOffset"] for row in lines} and len(lines) == len(ORIGINAL) - 1


@pytest.mark.parametrize("name", DAMAGE)
def test_verify_names_the_record_not_only_its_consequences(store, name):
    kind, reason = damaged(store, name)
    own = [f for f in verify_path(store, CONF).findings if f.structure == COMMITLOG]
    assert [(f.file, f.offset, f.bytes, f.kind, f.reason) for f in own] == [(str(store / MIDDLE), AT, SIZE, kind,
                                                                             reason)]


@pytest.mark.parametrize("name", DAMAGE)
def test_doctor_plans_a_cut_and_repack_at_the_record(store, name):
    kind, _ = damaged(store, name)
    out = run("doctor", store, "--config", CONF, "--json")
    doc = json.loads(out.stdout)
    assert out.returncode == 1 and doc["status"] == "plan"
    cuts = [s for s in doc["steps"] if s["action"] == CUT_AND_REPACK]
    assert [(s["at"], s["kinds"], s["mends"], s["recordsLost"], s["bytesLost"]) for s in cuts] == [
        (AT, sorted([kind, "queue-offset-gap"]), 2, 1, SIZE)]  # the record after it in its queue skips its offset
    assert doc["byKind"][kind] == 1


def test_inspect_gives_the_scan_verdict(store):
    _, reason = damaged(store, "last 60 bytes of its properties zeroed")
    doc = json.loads(run("inspect", store, "--phy-offset", AT, "--config", CONF, "--json").stdout)
    assert doc["problem"] == reason


def test_salvage_makes_no_queue_of_a_negative_queue_id(store, tmp_path):
    damaged(store, "queueId reads -20")
    topic = message.decode(_SEGMENT, POS).topic
    salvaged = salvage_into(open_reader(store, CONF), tmp_path / "new")
    assert salvaged.written is not None and salvaged.written.messages == len(ORIGINAL) - 1
    assert [(f.offset, f.kind) for f in salvaged.findings] == [(AT, impossible.NEGATIVE_QUEUE_ID)]
    assert not (tmp_path / "new" / "consumequeue" / topic / "-20").exists()
    assert (tmp_path / "new" / "consumequeue" / topic).is_dir()


@pytest.mark.parametrize("name", DAMAGE)
def test_broker_recovery_still_takes_the_record(store, name):
    damaged(store, name)
    buf = np.frombuffer((store / MIDDLE).read_bytes(), dtype=np.uint8)
    rows = Rows.empty(4096)
    starts = [int(x) for step in walk_on(buf, 0, len(buf), SEG, rows, broker=True, check_crc=True)
              for x in rows.start[: step.count]]
    assert POS in starts and POS + SIZE in starts
    plan = plan_recovery(store, StoreConfig.from_file(CONF)[0])
    assert plan.refused is None and plan.dropped_count == 0
    assert plan.end == ORIGINAL[-1]["commitLogOffset"] + ORIGINAL[-1]["storeSize"]


def test_queue_offset_at_the_bound_is_not_damage(store):
    corrupt(store, MIDDLE, "write", POS + message.QUEUE_OFFSET_OFFSET, data=struct.pack(">q", LEAST_IMPOSSIBLE - 1))
    assert not [f for f in findings(store) if f.structure == COMMITLOG]
    assert AT in {r["commitLogOffset"] for r in records(store)}


def test_queue_offset_bound_lets_an_inner_batch_record_hold_many_offsets():
    at = np.array([0, 91, 910, 910, 910])
    offsets = np.array([0, 1, 10, 11, 11])
    flags = np.array([0, 0, 0, 0, sysflag.INNER_BATCH])
    assert impossible.impossible_queue_offset(offsets, at, flags).tolist() == [False, False, False, True, False]
    assert impossible.impossible_queue_offset(np.array([-1]), np.array([910]), np.array([sysflag.INNER_BATCH]))[0]


# -- the properties check reads the properties field only ---------------------------------------------------
HOST = parse_host("10.0.0.1:9876")


def _segment(props: list[str], body: bytes = bytes(40), size: int = 4096) -> tuple[bytearray, list[int]]:
    """Records with zero-filled bodies and the given properties, back to back, then zeros."""
    buf, starts, pos = bytearray(size), [], 0
    for q, text in enumerate(props):
        m = message.Message(topic="T", body=body, properties_string=text, queue_offset=q, physical_offset=pos,
                            born_host=HOST, store_host=HOST, body_crc=body_crc(body))
        starts.append(pos)
        pos += message.encode_into(buf, pos, m)
    return buf, starts


def test_zeros_around_the_properties_are_not_read_as_torn_properties():
    buf, starts = _segment(["", "TAGS\x01a", "KEYS\x01k1 k2\x02TAGS\x01b\x02", ""])
    batches, _, found = scan_buffer(buf)
    assert found == [] and [int(p) for b in batches for p in b.pos] == starts


def test_one_nul_byte_makes_properties_torn():
    buf, starts = _segment(["TAGS\x01a", "TAGS\x01b\x00c", "TAGS\x01d"])
    batches, _, found = scan_buffer(buf, file="seg")
    props_at = starts[2] - len("TAGS\x01b\x00c")
    assert [(f.file, f.offset, f.bytes, f.kind, f.reason) for f in found] == [
        ("seg", starts[1], starts[2] - starts[1], impossible.TORN_PROPERTIES,
         f"properties torn: NUL bytes at {props_at + 6} (byte 6 of 8, 1 in all): no producer writes them, and the "
         "body CRC does not cover the properties")]
    assert [int(p) for b in batches for p in b.pos] == [starts[0], starts[2]]


def test_compiled_nul_search_disagrees_with_python():
    rng = np.random.default_rng(7)
    buf = rng.integers(0, 4, size=3000).astype(np.uint8)  # zeros one byte in four
    starts = rng.integers(0, 2900, size=200).astype(np.int64)
    lengths = rng.integers(0, 100, size=200).astype(np.int64)
    lengths[:3] = 0
    starts[-1], lengths[-1] = 2900, 100  # a string up to the buffer's end
    py, nb = [np.empty(200, dtype=np.int64) for _ in range(2)], [np.empty(200, dtype=np.int64) for _ in range(2)]
    impossible.nul_bytes(buf, starts, lengths, *py)
    kernels.nul_bytes(buf, starts, lengths, *nb)
    assert py[0].tolist() == nb[0].tolist() and py[1].tolist() == nb[1].tolist()
    expect = [bytes(buf[s : s + n]) for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)]
    assert py[0].tolist() == [e.find(b"\0") for e in expect] and py[1].tolist() == [e.count(b"\0") for e in expect]


# -- what brokers wrote is no damage --------------------------------------------------------------------------
def test_golden_stores_still_verify_without_problems(golden_basic, golden_v5):
    for golden in (golden_basic, golden_v5):
        report = verify_path(golden / "store", golden / "broker.conf")
        assert [f for f in report.findings if f.severity == ERROR] == [], golden.name
        assert report.messages == len(json.loads((golden / "expected.json").read_text())["messages"])


def test_fixture_store_has_no_record_no_broker_writes():
    assert findings(FIXTURE) == [] and len(ORIGINAL) == 420


def test_window_whose_every_record_is_damage_gives_an_empty_batch_its_columns_can_be_asked():
    buf, starts = _segment(["TAGS\x01\x00", "KEYS\x01\x00\x00"])
    batches, _, found = scan_buffer(buf)
    assert [(f.offset, f.kind) for f in found] == [(s, impossible.TORN_PROPERTIES) for s in starts]
    assert [len(b) for b in batches] == [0]
    assert (batches[0].bodies(), batches[0].properties_array().to_pylist(), batches[0].topic_names()) == ([], [], [])


@pytest.mark.parametrize("name", ["queueId reads -20", "queueOffset reads 2^63",
                                  "last 60 bytes of its properties zeroed"])
def test_doctor_apply_cuts_the_record_names_it_in_the_ledger_and_converges(store, name):
    """A queueId of -20 made `rebuild-queues` create consumequeue/PaymentTopic/-20 (2 problems became 29); a torn
    record was named only by its consequences and the queues were rebuilt to match the damage."""
    damaged(store, name)
    out = run("doctor", store, "--config", CONF, "--apply", "--json")
    doc = json.loads(out.stdout)
    assert (out.returncode, doc["status"], doc["recordsLost"], doc["bytesLost"]) == (0, "mended", 1, SIZE)
    ledger = [json.loads(line) for line in next((store / "lost").glob("*/ledger.jsonl")).read_text().splitlines()]
    assert [(r["commitLogOffset"], r["storeSize"], r["queueOffset"]) for r in ledger] == [
        (AT, SIZE, VICTIM["queueOffset"])]
    assert not any(p.name.startswith("-") for p in (store / "consumequeue").rglob("*"))
    again = run("doctor", store, "--config", CONF, "--json")
    assert (again.returncode, json.loads(again.stdout)["status"]) == (0, "healthy")
