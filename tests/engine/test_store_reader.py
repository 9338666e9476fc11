"""Store readers, config parsing, the fixture store and the bench generator."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rmqtool.bench.generate import BENCH_TOPIC, generate_store
from rmqtool.bench.scan import run_scan_bench, scan_once
from rmqtool.engine.config import StoreConfig, parse_properties
from rmqtool.engine.reader import StoreReader, open_reader
from rmqtool.errors import RmqError
from rmqtool.ops.views import decode_log
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.crc import body_crc

ROOT = Path(__file__).resolve().parents[2]


def _messages(reader: StoreReader, **kw) -> list[message.Message]:
    return [m.message for m in decode_log(reader, **kw) if hasattr(m, "message")]


def test_broker_conf_parsing_reads_java_properties_syntax():
    props = parse_properties("# comment\n! other\nmappedFileSizeCommitLog = 65536\nflushDiskType: SYNC_FLUSH\n"
                             "messageDelayLevel=1s 5s \\\n  10s\n")
    assert props == {"mappedFileSizeCommitLog": "65536", "flushDiskType": "SYNC_FLUSH",
                     "messageDelayLevel": "1s 5s 10s"}
    cfg, given = StoreConfig.from_properties(props)
    assert cfg.mappedFileSizeCommitLog == 65536 and cfg.flushDiskType == "SYNC_FLUSH"
    assert cfg.delay_levels_ms == [1000, 5000, 10000]
    assert given == {"mappedFileSizeCommitLog", "flushDiskType", "messageDelayLevel"}


@pytest.mark.parametrize("bad", ["mappedFileSizeCommitLog=big", "checkCRCOnRecover=maybe", "messageDelayLevel=1x"])
def test_bad_broker_conf_value_is_rejected(bad):
    with pytest.raises(RmqError):
        StoreConfig.from_properties(parse_properties(bad))


def test_segment_size_is_inferred_from_the_files(fixture_store):
    assert StoreReader(fixture_store).segment_size == 65536


def test_fixture_store_is_what_make_store_builds(tmp_path):
    out = tmp_path / "store"
    subprocess.run([sys.executable, str(ROOT / "fixtures" / "make_store.py"), str(out)], check=True)
    fixture = ROOT / "fixtures" / "store"
    built = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert built == sorted(p.relative_to(fixture) for p in fixture.rglob("*") if p.is_file())
    for rel in built:
        assert (out / rel).read_bytes() == (fixture / rel).read_bytes(), f"{rel} differs: run fixtures/make_store.py"


def test_fixture_store_decodes_every_message_with_crc(fixture_store, fixture_conf):
    from fixtures_messages import expected_messages

    reader = open_reader(fixture_store, fixture_conf)
    got = _messages(reader)
    want = [m.with_host_flags() for m in expected_messages()]
    assert len(got) == len(want) == 420
    for g, w in zip(got, want, strict=True):
        assert (g.topic, g.body, g.properties_string, g.queue_id, g.flag, g.sys_flag, g.born_host, g.store_host) == \
            (w.topic, w.body, w.properties_string, w.queue_id, w.flag, w.sys_flag, w.born_host, w.store_host)
        assert g.body_crc == body_crc(w.body)


def test_from_offset_inside_a_record_starts_at_the_next_record(fixture_store):
    reader = StoreReader(fixture_store)
    first_two = _messages(reader, count=2)
    later = _messages(reader, from_offset=first_two[0].physical_offset + 5, count=1)
    assert later[0].physical_offset == first_two[1].physical_offset


def test_count_and_topic_filter(fixture_store):
    reader = StoreReader(fixture_store)
    got = _messages(reader, topic="PaymentTopic", count=7)
    assert len(got) == 7 and {m.topic for m in got} == {"PaymentTopic"}
    every = [m for m in _messages(reader) if m.topic == "PaymentTopic"][:7]
    assert [m.physical_offset for m in got] == [m.physical_offset for m in every]


def test_read_only_scan_creates_no_file(store_copy):
    before = {p: p.stat().st_mtime_ns for p in store_copy.rglob("*")}
    reader = StoreReader(store_copy)
    assert len(_messages(reader)) == 420
    assert {p: p.stat().st_mtime_ns for p in store_copy.rglob("*")} == before


def test_generated_bench_store_decodes_exactly(tmp_path):
    info = generate_store(tmp_path, 3000, 37, segment_size=1 << 16, queues=3, cq_file_size=20 * 500)
    reader = StoreReader(tmp_path)
    msgs = _messages(reader)
    assert len(msgs) == 3000 and info.segments == -(-3000 // ((65536 - 8) // info.record_len))
    assert [m.queue_id for m in msgs[:4]] == [0, 1, 2, 0]
    assert [m.queue_offset for m in msgs[:4]] == [0, 0, 0, 1]
    assert {m.topic for m in msgs} == {BENCH_TOPIC}
    assert all(m.body_crc == body_crc(m.body) and len(m.body) == 37 for m in msgs)
    uniq = [m.properties["UNIQ_KEY"] for m in msgs]
    assert len(set(uniq)) == 3000 and uniq[255].endswith("00FF")  # the row number is the counter
    offsets = [int(o) for offs, _ in reader.consume_queue(BENCH_TOPIC, 1) for o in offs]
    assert offsets == list(range(1000))
    entries = np.concatenate([e for _, e in reader.consume_queue(BENCH_TOPIC, 1)])
    assert entries["commitLogOffset"].tolist() == [m.physical_offset for m in msgs[1::3]]


def test_scan_bench_counts_every_message_in_each_mode(tmp_path):
    generate_store(tmp_path, 2000, 10, segment_size=1 << 16, queues=2)
    reader = StoreReader(tmp_path)
    full = scan_once(reader, "full")
    assert full == scan_once(reader, "headers")
    assert full[0] == 2000 and full[2] == 0
    assert scan_once(reader, "consumequeue")[0] == 2000
    result = run_scan_bench(tmp_path, messages=0, body_size=0, mode="headers", repeat=1)
    assert result["messages"] == 2000 and result["bytes"] == full[1]
    assert set(result) >= {"mode", "messages", "bytes", "seconds", "messagesPerSecond", "peakRssBytes"}


def test_bench_scan_cli_json(tmp_path):
    exe = Path(sys.executable).with_name("rmqtool")
    out = subprocess.run([str(exe), "bench", "scan", "--messages", "5000", "--body-size", "20", "--mode", "full",
                          "--repeat", "1", "--json"], capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert doc["mode"] == "full" and doc["messages"] == 5000 and doc["corruptRegions"] == 0


def test_empty_commitlog_folder_has_no_messages(tmp_path):
    (tmp_path / "commitlog").mkdir()
    assert _messages(StoreReader(tmp_path)) == []


def test_not_a_store_is_refused(tmp_path):
    with pytest.raises(RmqError, match="not a RocketMQ store"):
        StoreReader(tmp_path)
    with pytest.raises(RmqError, match="no such file"):
        StoreReader(tmp_path / "missing")


def test_segment_file_given_directly_keeps_its_base_offset(fixture_store):
    second = sorted((fixture_store / "commitlog").iterdir())[1]
    reader = StoreReader(second)
    msgs = _messages(reader)
    assert msgs and msgs[0].physical_offset == 65536
    whole = [m for m in _messages(StoreReader(fixture_store)) if 65536 <= m.physical_offset < 131072]
    assert [m.physical_offset for m in msgs] == [m.physical_offset for m in whole]


def test_copy_is_independent(tmp_path, fixture_store):
    dst = tmp_path / "s"
    shutil.copytree(fixture_store, dst)
    os.remove(dst / "checkpoint")
    with pytest.raises(RmqError, match="no checkpoint"):
        StoreReader(dst).checkpoint()


def test_a_scan_from_the_end_of_the_log_does_not_search_the_unwritten_tail(tmp_path, monkeypatch):
    """recover --dry-run scans from the write position: the search for the next record read the
    whole unwritten tail of a 1 GiB segment (1.23 GB resident, twice the time)."""
    from cli_helpers import CONF, fixture_copy

    from rmqtool.files.segments import data_end
    from rmqtool.structures.commitlog.scan import SegmentScanner

    root = fixture_copy(tmp_path)
    last = root / "commitlog" / f"{2 * 65536:020d}"
    end = 151686 - 2 * 65536
    with open(last, "r+b") as f:  # the unwritten tail becomes a hole, as in a sparse segment
        f.truncate(end)
        f.truncate(65536)
    written = data_end(last)
    assert written is not None and end <= written < 65536
    searched: list[int] = []
    candidates = SegmentScanner._candidates

    def recording(self, lo, hi):
        searched.append(hi)
        return candidates(self, lo, hi)

    monkeypatch.setattr(SegmentScanner, "_candidates", recording)
    reader = StoreReader(root, StoreConfig.from_file(CONF)[0])
    for start in (151686, 151686 - 10):  # at the end, and inside the last record
        chunks = list(reader.scan(start, verify_crc=False))
        assert not any(c.batch is not None and len(c.batch) for c in chunks)
    assert max(searched, default=0) <= written
