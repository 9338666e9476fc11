"""verify's commitlog and consume-queue findings: one finding per damaged file, totals that count every
finding (listed or not), groups of one kind only, and the consume-queue rules recovery applies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import CONF, fixture_copy, run

from rmqtool.engine.config import StoreConfig
from rmqtool.ops.recovery import plan_recovery
from rmqtool.ops.verify import REPORT_CAP, verify_path
from rmqtool.report import CONSUMEQUEUE, ERROR, group_findings
from rmqtool.structures import consumequeue, index
from rmqtool.structures.commitlog import message

SEG = 65536
QUEUE_FILE = 4000  # mappedFileSizeConsumeQueue of fixtures/broker.conf
MIDDLE = f"{SEG:020d}"
LAST = f"{2 * SEG:020d}"
QUEUE = Path("consumequeue") / "OrderTopic" / "0"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return fixture_copy(tmp_path)


def cfg() -> StoreConfig:
    return StoreConfig.from_file(CONF)[0]


def errors(root: Path) -> list:
    return [f for f in verify_path(root, CONF).findings if f.severity == ERROR]


def written(path: Path) -> int:
    return consumequeue.written_count(consumequeue.decode_entries(path.read_bytes()))


def test_wrong_size_segment_is_one_finding(store):
    seg = store / "commitlog" / MIDDLE
    seg.write_bytes(seg.read_bytes()[:30000])
    sized = [f for f in verify_path(store, CONF).findings if f.kind == "segment-size"]
    assert [(f.file, f.offset, f.bytes, f.reason) for f in sized] == [
        (str(seg), SEG, SEG - 30000, f"segment is 30000 bytes, expected {SEG}")]


def test_json_problems_count_records_without_entry_beyond_the_listing_cap(tmp_path):
    from rmqtool.engine.message_store import MessageStore
    from rmqtool.structures.commitlog.hosts import parse_host

    host, n = parse_host("1.2.3.4:5"), REPORT_CAP + 50
    root = tmp_path / "store"
    with MessageStore(root, cfg()) as st:
        for _ in range(n):
            st.put_message(message.Message(topic="T", body=b"x" * 20, born_host=host, store_host=host))
    (root / "consumequeue" / "T" / "0" / f"{0:020d}").unlink()
    out = run("verify", root, "--config", CONF, "--json")
    doc = json.loads(out.stdout)
    assert out.returncode == 1
    assert (doc["problems"], doc["warnings"]) == (n, 0)
    assert doc["byKind"] == {"record-without-entry": n}
    listed = [f for f in doc["findings"] if f["kind"] == "record-without-entry"]
    summed = [f["reason"].split(":")[0] for f in listed if "more like" in f["reason"]]
    assert len(listed) == REPORT_CAP + 1 and summed == [f"{n - REPORT_CAP} more like"]
    assert f"{n} problems, 0 warnings" in run("verify", root, "--config", CONF).stdout


def test_crc_mismatch_and_garbage_tail_are_not_one_group(store):
    from rmqtool.engine.reader import open_reader
    from rmqtool.ops.views import decode_log

    last = [d.message for d in decode_log(open_reader(store, CONF)) if isinstance(d, message.DecodedMessage)
            and d.message.physical_offset >= 2 * SEG]
    bad = next(m for m in last if m.body)
    end = last[-1].physical_offset + last[-1].store_size
    seg = store / "commitlog" / LAST
    data = bytearray(seg.read_bytes())
    data[bad.physical_offset - 2 * SEG + message.header_len(bad.sys_flag)] ^= 0x10  # its body's first byte
    data[end - 2 * SEG : end - 2 * SEG + 300] = (b"\x5a\xa5junk" * 300)[:300]
    seg.write_bytes(bytes(data))
    found = [f for f in errors(store) if f.file == str(seg)]
    assert [(g.kind, g.first_offset, g.count, g.bytes) for g in group_findings(found)] == [
        ("crc-mismatch", bad.physical_offset, 1, bad.store_size), ("garbage-tail", end, 1, 300)]


@pytest.mark.parametrize("damage", ["too long by 7 bytes", "cut short"])
def test_verify_reports_every_queue_file_recover_refuses(store, damage):
    path = store / QUEUE / f"{0:020d}"
    data = path.read_bytes()
    path.write_bytes(data + bytes(7) if damage == "too long by 7 bytes" else data[:1000])
    size = path.stat().st_size
    refused = plan_recovery(store, cfg(), count_dispatch=False).refused
    assert refused and refused.startswith(f"{path}: ")
    found = [f for f in errors(store) if f.structure == CONSUMEQUEUE and f.file == str(path)]
    assert [(f.kind, f.offset, f.bytes, f.reason) for f in found] == [
        ("queue-file-size", 0, abs(size - QUEUE_FILE),
         f"{size} bytes, not mappedFileSizeConsumeQueue={QUEUE_FILE}: the broker refuses to start")]
    out = run("verify", store, "--config", CONF)
    assert out.returncode == 1 and "1 problems" in out.stdout


def test_queue_file_copied_to_wrong_name_is_reported(store):
    first = store / QUEUE / f"{0:020d}"
    copy = first.with_name(f"{QUEUE_FILE:020d}")
    shutil.copyfile(first, copy)
    n = written(first)
    found = errors(store)
    past = [f for f in found if f.kind == "queue-file-past-end"]
    assert [(f.file, f.offset, f.bytes) for f in past] == [(str(copy), QUEUE_FILE, QUEUE_FILE)]
    wrong = [f for f in found if f.kind == "entry-mismatch"]
    per_file = QUEUE_FILE // consumequeue.ENTRY_LEN
    assert [(f.file, f.offset) for f in wrong] == [(str(copy.parent), (per_file + k) * consumequeue.ENTRY_LEN)
                                                   for k in range(n)]
    assert f"entry {per_file + 1} " in wrong[1].reason and "queue offset 1," in wrong[1].reason
    assert len(found) == n + 1



def test_a_missing_key_is_found_when_its_hash_shares_the_low_bits_of_another_key_of_the_record(tmp_path):
    """Two keys of one record whose index hashes agree in their low 24 bits (T#k10226 and T#k397000): the
    entry of the second rewritten with the first's hash leaves the second key unindexed."""
    store = tmp_path / "store"
    assert run("append", store, "--topic", "T", "--keys", "k10226 k397000", "--body", "x").returncode == 0
    first, second = (index.key_hash(index.index_key("T", k)) for k in ("k10226", "k397000"))
    assert first != second and first & 0xFFFFFF == second & 0xFFFFFF
    (path,) = (store / "index").iterdir()
    data = bytearray(path.read_bytes())
    entries = index.entries_offset(StoreConfig().maxHashSlotNum)
    at = next(entries + index.ENTRY_LEN * i for i in range(1, 4)
              if int.from_bytes(data[entries + index.ENTRY_LEN * i :][:4], "big") == second)
    data[at : at + 4] = first.to_bytes(4, "big")
    path.write_bytes(bytes(data))
    out = run("verify", store, "--json")
    kinds = json.loads(out.stdout)["byKind"]
    assert out.returncode == 1 and kinds.get("key-not-indexed") == 1, kinds


def test_verify_summary_rows_json_and_all_count_the_same_findings(tmp_path):
    """The summary said 121 problems where the grouped row said 101 and --all showed 100 rows and "21 more like"."""
    from damage import damaged_stores

    store = damaged_stores(tmp_path, ["middle-missing"])["middle-missing"]
    doc = json.loads(run("verify", store, "--config", CONF, "--json").stdout)
    every = json.loads(run("verify", store, "--config", CONF, "--json", "--all").stdout)
    assert doc["problems"] == every["problems"] == 513
    assert sum(g["count"] for g in doc["groups"]) == sum(f.get("count", 1) for f in doc["findings"]) == 513
    assert len(every["findings"]) == 513 and not any("more like" in f["reason"] for f in every["findings"])
    capped = [g for g in doc["groups"] if g["file"].endswith("20231114221320001")]
    assert [(g["count"], g["firstOffset"], g["lastOffset"]) for g in capped] == [(185, 1716, 3696)]
    table = run("verify", store, "--config", CONF, "--all").stdout
    assert table.count("│ error") == 513 and table.rstrip().endswith("513 problems, 0 warnings")
