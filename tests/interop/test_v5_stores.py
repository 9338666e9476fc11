"""5.x stores: the RocksDB consume queue the 5.3.3 broker wrote (golden v5-rocksdb), store kinds,
DLedger commitlogs and the timer log (made with the codecs), and writes refused by kind."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import RUN_GUARD_S, run
from stores5x import make_5x_checkpoint_store, make_batch_queue_store, make_timer_store

from rmqtool.bench.layouts import records, to_dledger, to_rocksdb
from rmqtool.engine.kind import KIND_4X, KIND_5X_FILE, KIND_5X_ROCKSDB, KIND_DLEDGER, detect
from rmqtool.engine.reader import StoreReader, open_reader
from rmqtool.files.paths import StorePaths
from rmqtool.ops.info import store_info
from rmqtool.ops.query import StoreQuery
from rmqtool.ops.timers import timer_log
from rmqtool.ops.verify import verify_store
from rmqtool.structures import dledger, timerlog
from rmqtool.structures.consumequeue import rockskeys as rocksqueue

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "store"
FIXTURE_CONF = ROOT / "fixtures" / "broker.conf"


def tree_digest(root: Path) -> str:
    """Names, sizes and contents of every file and folder under `root`."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        h.update(dirpath.encode())
        for name in sorted(filenames):
            p = Path(dirpath) / name
            h.update(name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def v5_expected(golden_v5: Path) -> dict:
    return json.loads((golden_v5 / "expected.json").read_text())


# -- the RocksDB consume queue the 5.3.3 broker wrote -----------------------------------------------------
def test_every_rocksdb_queue_entry_reads_back_as_the_broker_returned_it(golden_v5, v5_expected):
    before = tree_digest(golden_v5)
    reader = open_reader(golden_v5 / "store", golden_v5 / "broker.conf")
    stored_time = {m["commitLogOffset"]: m["storeTimestamp"] for m in v5_expected["messages"]}
    assert reader.queues.kind == "rocksdb"
    assert sorted((q["topic"], q["queueId"]) for q in v5_expected["queues"]) == reader.queues.queues()
    for q in v5_expected["queues"]:
        rows = [(qo, off, size, tags, ts) for qoffs, entries, times in reader.queues.read_rows(q["topic"], q["queueId"])
                for qo, off, size, tags, ts in zip(qoffs.tolist(), entries["commitLogOffset"].tolist(),
                                                   entries["size"].tolist(), entries["tagsCode"].tolist(),
                                                   times.tolist(), strict=True)]
        assert [r[:4] for r in rows] == [tuple(e) for e in q["entries"]]
        assert [r[4] for r in rows] == [stored_time[r[1]] for r in rows]  # the value's own store time
    reader.queues.close()
    assert tree_digest(golden_v5) == before  # not even the binding's settings file was written


def test_rocksdb_offset_table_rows_are_the_brokers(golden_v5, v5_expected):
    reader = open_reader(golden_v5 / "store")
    table = reader.queues.offset_table()
    got = sorted((b.topic, b.queue_id, b.kind, b.queue_offset, b.commit_log_offset)
                 for rows in table.values() for b in rows.values())
    kinds = {"MAXIMUM": "max", "MINIMUM": "min"}
    want = sorted((r["topic"], r["queueId"], kinds[r["type"]], r["cqOffset"], r["commitLogOffset"])
                  for r in v5_expected["rocksdbOffsetTable"])
    assert got == want
    assert reader.queues.checkpoint_offset == v5_expected["maxPhyOffset"]
    reader.queues.close()


def test_rocksdb_keys_round_trip_through_the_layout():
    key = rocksqueue.entry_key("OrderTopic", 3, 2**40 + 5)
    parsed = rocksqueue.parse_entry_key(key)
    assert key[:4] == (10).to_bytes(4, "big") and key[4:5] == b"\x01"
    assert (parsed.topic, parsed.queue_id, parsed.queue_offset) == ("OrderTopic", 3, 2**40 + 5)
    assert rocksqueue.after_queue(rocksqueue.queue_prefix("OrderTopic", 3)) > key
    assert rocksqueue.parse_entry_key(b"\x00\x00\x00\x05\x01ab") is None


def test_decode_consumequeue_and_time_query_on_rocksdb(golden_v5, v5_expected):
    store, conf = str(golden_v5 / "store"), str(golden_v5 / "broker.conf")
    out = run("decode", "consumequeue", store, "--topic", "OrderTopic", "--queue", "1", "--jsonl", "--config", conf)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    want = next(q for q in v5_expected["queues"] if q["topic"] == "OrderTopic" and q["queueId"] == 1)["entries"]
    assert [[r["queueOffset"], r["commitLogOffset"], r["size"], r["tagsCode"]] for r in rows] == want
    q = StoreQuery(open_reader(golden_v5 / "store", golden_v5 / "broker.conf"))
    for t in v5_expected["offsetInQueueByTime"]:
        assert q.offset_by_time(t["topic"], t["queueId"], t["timestamp"])["queueOffset"] == t["offset"]
    q.close()


def test_verify_of_the_5x_rocksdb_store_is_clean(golden_v5):
    report = verify_store(open_reader(golden_v5 / "store", golden_v5 / "broker.conf"))
    assert report.problems == 0 and report.queue_entries == report.messages == 223
    assert report.findings == []


def test_a_rocksdb_queue_without_manifest_is_one_line_and_exit_2(golden_v5, tmp_path):
    store = tmp_path / "store"
    shutil.copytree(golden_v5 / "store", store)
    for p in (store / "consumequeue").glob("MANIFEST-*"):
        p.unlink()
    (store / "consumequeue" / "CURRENT").write_text("MANIFEST-000005\n")
    before = tree_digest(store)
    out = run("decode", "consumequeue", str(store), "--topic", "OrderTopic", "--queue", "0")
    assert out.returncode == 2
    assert out.stderr.startswith("rmqtool: error: ") and len(out.stderr.strip().splitlines()) == 1
    assert "consumequeue: cannot open the RocksDB consume queue" in out.stderr
    assert tree_digest(store) == before


def test_without_rocksdict_the_error_says_what_to_install(golden_v5):
    code = ("import sys; sys.modules['rocksdict'] = None\n"
            "from rmqtool.cli.app import main\n"
            f"main(['decode', 'consumequeue', {str(golden_v5 / 'store')!r}, '--topic', 'OrderTopic', '--queue', '0'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=RUN_GUARD_S)
    assert out.returncode == 2
    assert "pip install 'rmqtool[rocksdb]'" in out.stderr and "Traceback" not in out.stderr


# -- kinds, info, and writes refused --------------------------------------------------------------------
@pytest.fixture(scope="module")
def kinds(tmp_path_factory, golden_v5) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("kinds")
    stores = {"rocksdb": base / "rocksdb", "dledger": base / "dledger", "timer": base / "timer",
              "checkpoint5": base / "checkpoint5", "batch": base / "batch"}
    shutil.copytree(golden_v5 / "store", stores["rocksdb"])
    stores["dledger"].mkdir()
    to_dledger(FIXTURE, stores["dledger"])
    make_timer_store(FIXTURE, stores["timer"], [(0, 239, 1_700_000_000_000, 5000)])
    make_5x_checkpoint_store(FIXTURE, stores["checkpoint5"])
    make_batch_queue_store(FIXTURE, stores["batch"])
    return stores


@pytest.mark.parametrize(("name", "kind", "evidence"), [
    ("rocksdb", KIND_5X_ROCKSDB, "consumequeue/ holds a RocksDB database"),
    ("dledger", KIND_DLEDGER, "dledger-n0/data holds DLedger entries"),
    ("timer", KIND_5X_FILE, "timer store: timerwheel, timerlog, timercheck"),
    ("checkpoint5", KIND_5X_FILE, "checkpoint holds the 5.x longs"),
    ("batch", KIND_5X_FILE, "batchconsumequeue/ holds 1 topic(s)"),
])
def test_store_kind_is_told_by_the_files(kinds, name, kind, evidence):
    found = detect(StorePaths(kinds[name]))
    assert found.kind == kind and not found.writable
    assert any(e.startswith(evidence) for e in found.evidence), found.evidence


def test_4x_stores_are_4x_and_writable(golden_basic):
    for store in (FIXTURE, golden_basic / "store"):
        found = detect(StorePaths(store))
        assert (found.kind, found.writable, found.evidence) == (KIND_4X, True, ["no 5.x-only file or record found"])


def test_info_names_the_kind_extent_and_queues_of_every_golden_and_the_fixture(golden_basic, golden_v5, v5_expected):
    doc = store_info(golden_v5 / "store")
    assert doc["kind"] == KIND_5X_ROCKSDB and doc["consumeQueues"]["form"] == "rocksdb"
    assert doc["commitlog"]["firstOffset"] == v5_expected["minPhyOffset"]
    assert doc["commitlog"]["endOffset"] == v5_expected["maxPhyOffset"]
    assert doc["messagesInQueues"] == sum(len(q["entries"]) for q in v5_expected["queues"])
    assert doc["checkpoint"]["physicMsgTimestamp"] == v5_expected["checkpoint"]["physicMsgTimestamp"]
    assert doc["index"]["entries"] == v5_expected["indexEntriesInFiles"]
    assert doc["abortFile"] is False and doc["lockHeldBy"] is None
    basic = json.loads((golden_basic / "expected.json").read_text())
    doc = store_info(golden_basic / "store", golden_basic / "broker.conf")
    assert doc["kind"] == KIND_4X and doc["consumeQueues"]["form"] == "file"
    assert doc["consumeQueues"]["fileSize"] == 4000
    assert doc["commitlog"]["endOffset"] == basic["maxPhyOffset"]
    got = {f"{t['topic']}/{q['queueId']}": q["maxOffset"] for t in doc["consumeQueues"]["topics"] for q in t["queues"]}
    assert got == basic["maxOffsetInQueue"]
    out = run("info", str(FIXTURE))
    assert out.returncode == 0 and "RocketMQ 4.x store" in out.stdout and "OrderTopic" in out.stdout


@pytest.mark.parametrize("name", ["rocksdb", "dledger", "timer", "checkpoint5", "batch"])
def test_every_writer_refuses_a_store_of_another_kind_and_changes_nothing(kinds, name, tmp_path):
    store = str(kinds[name])
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"topic": "T", "body": "aGk="}\n')
    before = tree_digest(kinds[name])
    for args in (["append", store, "--topic", "T", "--body", "x"], ["import", store, str(rows)],
                 ["recover", store], ["recover", store, "--dry-run"], ["recover", store, "--thorough"],
                 ["clean", store], ["clean", store, "--dry-run"],
                 ["spark-load", str(rows), "--store", store, "--master", "local[1]"]):
        out = run(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and "rmqtool writes only 4.x stores" in out.stderr, args
        assert "nothing was changed" in out.stderr
    assert tree_digest(kinds[name]) == before


def test_reading_commands_leave_the_rocksdb_store_byte_identical(kinds):
    store = str(kinds["rocksdb"])
    before = tree_digest(kinds["rocksdb"])
    for args in (["info", store], ["verify", store], ["decode", "consumequeue", store, "--topic", "PaymentTopic",
                                                      "--queue", "0"],
                 ["query", store, "--topic", "OrderTopic", "--queue", "0", "--queue-offset", "3"]):
        assert run(*args).returncode == 0, args
    assert tree_digest(kinds["rocksdb"]) == before


def test_file_queues_moved_into_rocksdb_read_back_the_same(tmp_path):
    before = {(t, q): [(a.tolist(), b.tolist()) for a, b in StoreReader(FIXTURE).consume_queue(t, q)]
              for t in StoreReader(FIXTURE).topics() for q in StoreReader(FIXTURE).queue_ids(t)}
    assert to_rocksdb(FIXTURE, tmp_path / "r") == 400
    reader = StoreReader(tmp_path / "r")
    assert reader.queues.kind == "rocksdb"
    after = {(t, q): [(a.tolist(), b.tolist()) for a, b in reader.consume_queue(t, q)]
             for t in reader.topics() for q in reader.queue_ids(t)}
    assert after == before
    assert verify_store(open_reader(tmp_path / "r", FIXTURE_CONF)).findings == []


def test_a_missing_rocksdb_entry_ends_the_queue_there_and_verify_says_so(tmp_path):
    from rocksdict import Options, Rdict

    to_rocksdb(FIXTURE, tmp_path / "r")
    db = Rdict(str(tmp_path / "r" / "consumequeue"), options=Options(raw_mode=True),
               column_families={rocksqueue.OFFSET_FAMILY: Options(raw_mode=True)})
    del db[rocksqueue.entry_key("OrderTopic", 0, 5)]
    db.close()
    reader = StoreReader(tmp_path / "r")
    assert [q for qoffs, _ in reader.consume_queue("OrderTopic", 0) for q in qoffs.tolist()] == [0, 1, 2, 3, 4]
    report = verify_store(open_reader(tmp_path / "r", FIXTURE_CONF))
    kinds = sorted({f.kind for f in report.findings})
    assert kinds == ["queue-gap", "record-without-entry"]
    assert sum(f.kind == "record-without-entry" for f in report.findings) == 33 - 5
    assert [f.reason for f in report.findings if f.kind == "queue-gap"] == [
        "queue OrderTopic/0 has no entry 5: entries 6..32 are past the gap and never read"]


# -- DLedger commitlog ---------------------------------------------------------------------------------
def test_dledger_log_decodes_to_the_same_records_at_their_entry_offsets(kinds):
    reader = StoreReader(kinds["dledger"])
    assert reader.dledger
    got = []
    for chunk in reader.scan():
        assert chunk.findings == []
        if chunk.batch is not None:
            got += [chunk.batch.message(i) for i in range(len(chunk.batch))]
    plain = [m for m in (StoreReader(FIXTURE).read_record(o) for o in _fixture_offsets())]
    assert len(got) == len(plain) == len(records(FIXTURE))
    for a, b in zip(got, plain, strict=True):
        assert (a.topic, a.body, a.properties_string, a.queue_offset) == (b.topic, b.body, b.properties_string,
                                                                         b.queue_offset)
    first = got[0]
    assert first.physical_offset == dledger.BODY_OFFSET  # the first entry starts at 0, its record 48 bytes in


def _fixture_offsets() -> list[int]:
    out = []
    for chunk in StoreReader(FIXTURE).scan():
        if chunk.batch is not None:
            out += chunk.batch.offsets.tolist()
    return out


def test_dledger_store_verifies_clean_and_answers_queries(kinds):
    store = kinds["dledger"]
    report = verify_store(open_reader(store, FIXTURE_CONF))
    assert report.problems == 0 and report.messages == 420 and report.queue_entries == 400
    q = StoreQuery(open_reader(store, FIXTURE_CONF))
    hit = q.by_queue_offset("OrderTopic", 1, 3)[0]
    assert q.by_msg_id(hit.message.msg_id).message.physical_offset == hit.message.physical_offset
    q.close()
    out = run("export", str(store), "--out", str(store.parent / "dl.jsonl"))
    assert out.returncode == 0, out.stderr
    assert len((store.parent / "dl.jsonl").read_text().splitlines()) == 420


def test_a_damaged_dledger_entry_is_one_finding_and_the_scan_goes_on(kinds, tmp_path):
    store = tmp_path / "dl"
    shutil.copytree(kinds["dledger"], store)
    first = sorted((store / "dledger-n0" / "data").iterdir())[0]
    raw = bytearray(first.read_bytes())
    second = int.from_bytes(raw[4:8], "big")  # the first entry's size: where the second starts
    raw[second + dledger.POS_OFFSET] ^= 0xFF
    first.write_bytes(bytes(raw))
    reader = StoreReader(store)
    findings, records = [], 0
    for chunk in reader.scan():
        findings += chunk.findings
        records += len(chunk.batch) if chunk.batch is not None else 0
    assert [(f.offset, f.reason) for f in findings] == [
        (second, "not a DLedger entry (magic, size or pos field); skipped to the next entry")]
    third = second + int.from_bytes(raw[second + 4 : second + 8], "big")
    assert findings[0].bytes == third - second and records == 419


# -- timer log ---------------------------------------------------------------------------------------------
def test_timer_log_units_decode_with_the_record_they_hold(tmp_path):
    store = tmp_path / "timer"
    units = [(0, 239, 1_700_000_000_000, 5000), (239, 176, 1_700_000_000_001, 10_000),
             (415, 200, 1_700_000_000_002, 1), (239, 176, 1_700_000_000_004, 3)]
    make_timer_store(FIXTURE, store, units)  # three units per segment: the fourth follows a blank
    got = list(timer_log(store))
    assert [u["offset"] for u in got] == [0, 52, 104, 52 * 3 + 16]
    assert [u["prevPos"] for u in got] == [-1, 0, 52, 104]
    assert [(u["commitLogOffset"], u["commitLogSize"], u["deliverTime"]) for u in got] == [
        (o, s, w + d) for o, s, w, d in units]
    assert got[0]["target"]["topic"] == "OrderTopic" and got[1]["target"]["topic"] == "PaymentTopic"
    assert got[2]["target"]["error"] == "the unit says 200 bytes, the record has 189"
    assert got[0]["target"]["msgId"] == StoreReader(FIXTURE).read_record(0).msg_id


def test_a_timer_log_unit_with_a_bad_magic_is_a_finding_and_exit_1(tmp_path):
    store = tmp_path / "timer"
    make_timer_store(FIXTURE, store, [(0, 239, 1_700_000_000_000, 5000), (239, 176, 1_700_000_000_001, 1)])
    seg = store / "timerlog" / "00000000000000000000"
    raw = bytearray(seg.read_bytes())
    raw[timerlog.UNIT_LEN + timerlog.UNIT.offset("magic") + 3] = 0x40
    seg.write_bytes(bytes(raw))
    out = run("decode", "timerlog", str(store), "--json")
    assert out.returncode == 1
    doc = json.loads(out.stdout)
    assert [u["offset"] for u in doc["units"]] == [0]
    assert [(f["offset"], f["reason"]) for f in doc["findings"]] == [(52, "not a timer log unit (size 52, magic 64)")]
