"""The columnar scanner: agreement with the per-record decoder, and corruption reported as data."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.message_store import MessageStore
from rmqtool.engine.reader import StoreReader, open_reader
from rmqtool.files.paths import offset_name
from rmqtool.structures.commitlog import message, properties
from rmqtool.structures.commitlog.hosts import parse_host
from rmqtool.structures.commitlog.message import Message
from rmqtool.structures.commitlog.scan import END_BLANK, END_ZEROS, SegmentScanner, scan_buffer

SEG = 4096
HOST = parse_host("10.0.0.1:9876")
# a NUL in properties is a torn write (test_impossible_records); a lone surrogate encodes to no UTF-8
_NO_NUL = st.characters(exclude_characters="\x00", exclude_categories=("Cs",))


def _cfg(seg: int = SEG) -> StoreConfig:
    cfg = StoreConfig()
    cfg.mappedFileSizeCommitLog, cfg.mappedFileSizeConsumeQueue = seg, 400
    cfg.maxHashSlotNum, cfg.maxIndexNum = 8, 32
    return cfg


def _simple(n: int, body: int = 50) -> list[Message]:
    return [Message(topic=f"T{i % 3}", body=bytes([i % 251]) * body, properties_string=f"TAGS\x01t{i}",
                    queue_id=i % 2, born_host=HOST, store_host=HOST, store_timestamp=1000 + i) for i in range(n)]


def _store(tmp_path: Path, msgs: list[Message], seg: int = SEG) -> tuple[Path, list[Message]]:
    root = tmp_path / "s"
    with MessageStore(root, _cfg(seg)) as store:
        for m in msgs:
            assert store.put_message(m, as_stored=True).ok
    return root, msgs


def _scan(root: Path, seg: int = SEG) -> tuple[list[int], list]:
    reader = StoreReader(root, _cfg(seg))
    offsets, findings = [], []
    for chunk in reader.scan():
        findings += chunk.findings
        if chunk.batch is not None:
            offsets += chunk.batch.offsets.tolist()
    return offsets, findings


def _segment(root: Path, index: int, seg: int = SEG) -> Path:
    return root / "commitlog" / offset_name(index * seg)


def _patch(path: Path, pos: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[pos : pos + len(data)] = data
    path.write_bytes(bytes(raw))


def _assert_batches_agree(reader: StoreReader) -> int:
    """Every column of every batch equals what the per-record decoder reads."""
    n = 0
    for chunk in reader.scan():
        b = chunk.batch
        if b is None:
            continue
        topics, props, bodies, crcs = b.topic_names(), b.properties_array().to_pylist(), b.bodies(), b.body_crcs()
        for i, off in enumerate(b.offsets.tolist()):
            m = reader.read_record(off)
            assert isinstance(m, Message)
            assert (b.cols["totalSize"][i], b.cols["queueId"][i], b.cols["queueOffset"][i], b.cols["sysFlag"][i],
                    b.cols["flag"][i], b.cols["bornTimestamp"][i], b.cols["storeTimestamp"][i],
                    b.cols["reconsumeTimes"][i], b.cols["preparedTransactionOffset"][i], b.cols["bodyCRC"][i],
                    b.cols["physicalOffset"][i], b.cols["bodyLength"][i], b.cols["magicCode"][i]) == (
                m.store_size, m.queue_id, m.queue_offset, m.sys_flag, m.flag, m.born_timestamp, m.store_timestamp,
                m.reconsume_times, m.prepared_transaction_offset, m.body_crc, m.physical_offset, len(m.body), m.magic)
            assert (topics[i], props[i], bodies[i], int(crcs[i])) == (m.topic, m.properties_string, m.body, m.body_crc)
            n += 1
    return n


def test_scanner_agrees_with_decoder_on_fixture_store(fixture_store, fixture_conf):
    assert _assert_batches_agree(open_reader(fixture_store, fixture_conf)) == 420


def test_scanner_agrees_with_decoder_on_golden_store(golden_basic):
    assert _assert_batches_agree(open_reader(golden_basic / "store", golden_basic / "broker.conf")) == 1500


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=700), st.sampled_from(["A", "Topic-β", "x" * 120]),
                          st.booleans(), st.booleans(), st.dictionaries(st.sampled_from(["TAGS", "KEYS", "k"]),
                                                                        st.text(_NO_NUL, max_size=8))), max_size=40))
def test_scanner_agrees_with_decoder_on_random_stores(tmp_path_factory, rows):
    msgs = [Message(topic=t, body=b, properties_string=properties.build(p), born_host=parse_host(
        "[::1]:1" if v6b else "1.2.3.4:5"), store_host=parse_host("[fe80::2]:7" if v6s else "5.6.7.8:9"),
        store_timestamp=i) for i, (b, t, v6b, v6s, p) in enumerate(rows)]
    root, stored = _store(tmp_path_factory.mktemp("h"), msgs, 2048)
    reader = StoreReader(root, _cfg(2048))
    assert _assert_batches_agree(reader) == len(msgs)
    assert _scan(root, 2048) == ([m.physical_offset for m in stored], [])


def test_segment_roll_leaves_blank_marker(tmp_path):
    root, stored = _store(tmp_path, _simple(80))
    raw = _segment(root, 0).read_bytes()
    _batches, end, findings = scan_buffer(raw, 0)
    assert end.kind == END_BLANK and findings == []
    last = [m for m in stored if m.physical_offset < SEG][-1]
    assert end.pos == last.physical_offset + last.store_size
    assert struct.unpack_from(">ii", raw, end.pos) == (SEG - end.pos, message.BLANK_MAGIC)
    assert _scan(root) == ([m.physical_offset for m in stored], [])


def test_bad_magic_mid_segment_is_reported_and_scan_resyncs(tmp_path):
    root, stored = _store(tmp_path, _simple(30))
    victim = stored[5]
    _patch(_segment(root, 0), victim.physical_offset + 4, b"\x00\x00\x00\x01")
    offsets, findings = _scan(root)
    assert offsets == [m.physical_offset for m in stored if m is not victim]
    assert len(findings) == 1
    f = findings[0]
    assert (f.offset, f.bytes) == (victim.physical_offset, victim.store_size)
    assert f.reason.startswith("bad magic code 0x00000001")


def test_body_crc_mismatch_reported_record_skipped_scan_continues(tmp_path):
    root, stored = _store(tmp_path, _simple(30))
    victim = stored[7]
    body_at = victim.physical_offset + message.HEADER_V4_LEN
    _patch(_segment(root, 0), body_at, b"\xff")
    offsets, findings = _scan(root)
    assert offsets == [m.physical_offset for m in stored if m is not victim]
    assert [(f.offset, f.bytes) for f in findings] == [(victim.physical_offset, victim.store_size)]
    assert findings[0].reason.startswith(f"body CRC mismatch: stored {victim.body_crc}")


def test_physical_offset_field_mismatch_reported(tmp_path):
    root, stored = _store(tmp_path, _simple(30))
    victim = stored[3]
    _patch(_segment(root, 0), victim.physical_offset + 28, struct.pack(">q", 12345))
    offsets, findings = _scan(root)
    assert offsets == [m.physical_offset for m in stored if m is not victim]
    assert [(f.offset, f.reason, f.bytes) for f in findings] == [
        (victim.physical_offset, f"physicalOffset field 12345 != position {victim.physical_offset}",
         victim.store_size)]


def test_torn_last_record_reported(tmp_path):
    root, stored = _store(tmp_path, _simple(10))
    last = stored[-1]
    seg = _segment(root, 0)
    raw = bytearray(seg.read_bytes())
    raw[last.physical_offset + 40 : last.physical_offset + last.store_size] = bytes(last.store_size - 40)
    seg.write_bytes(bytes(raw))
    offsets, findings = _scan(root)
    assert offsets == [m.physical_offset for m in stored[:-1]]
    assert [(f.offset, f.bytes) for f in findings] == [(last.physical_offset, last.store_size)]
    assert "length mismatch" in findings[0].reason


def test_zero_filled_gap_before_next_record(tmp_path):
    root, stored = _store(tmp_path, _simple(20))
    a, b = stored[4], stored[6]
    _patch(_segment(root, 0), a.physical_offset, bytes(b.physical_offset - a.physical_offset))
    offsets, findings = _scan(root)
    assert offsets == [m.physical_offset for m in stored if m not in (a, stored[5])]
    assert [(f.offset, f.reason, f.bytes) for f in findings] == [
        (a.physical_offset, "zero-filled gap before the next record", b.physical_offset - a.physical_offset)]


def test_garbage_tail_after_end_of_log(tmp_path):
    root, stored = _store(tmp_path, _simple(10))
    end = stored[-1].physical_offset + stored[-1].store_size
    _patch(_segment(root, 0), end, b"\x07" * 10)
    offsets, findings = _scan(root)
    assert offsets == [m.physical_offset for m in stored]
    assert [(f.offset, f.bytes) for f in findings] == [(end, 10)]
    assert findings[0].reason.endswith("no record follows")


def test_file_of_zeros_has_no_records():
    batches, end, findings = scan_buffer(bytes(SEG), 0)
    assert batches == [] and findings == [] and (end.kind, end.pos) == (END_ZEROS, 0)


def test_a_zero_filled_segments_tail_is_not_searched_for_a_record(tmp_path, monkeypatch):
    """A segment the broker filled with zeros ahead of time (warmMapedFileEnable) holds no hole: its whole unwritten
    tail was searched for a record start (0.3 s a GiB) before the scan saw it was zeros."""
    root, stored = _store(tmp_path, _simple(10))
    end = stored[-1].physical_offset + stored[-1].store_size
    buf = np.zeros(SEG, dtype=np.uint8)
    buf[:end] = np.frombuffer(_segment(root, 0).read_bytes()[:end], dtype=np.uint8)

    def searched(*_):
        raise AssertionError("a record start was searched for in the zero tail")

    monkeypatch.setattr(SegmentScanner, "next_record_start", searched)
    batches, seg_end, findings = scan_buffer(buf, 0)
    assert [int(o) for b in batches for o in b.offsets] == [m.physical_offset for m in stored]
    assert findings == [] and (seg_end.kind, seg_end.pos) == (END_ZEROS, end)


def test_truncated_segment_file(tmp_path):
    root, stored = _store(tmp_path, _simple(10))
    last = stored[-1]
    seg = _segment(root, 0)
    seg.write_bytes(seg.read_bytes()[: last.physical_offset + 30])
    offsets, findings = _scan(root)
    assert offsets == [m.physical_offset for m in stored[:-1]]
    # the finding covers the torn bytes up to the last non-zero one (bytes 28-29, the top of
    # the physicalOffset field, are zeros)
    assert [(f.offset, f.bytes) for f in findings] == [(last.physical_offset, 28)]
    assert findings[0].reason.startswith("bad totalSize")
    said = _cfg()
    said.given = frozenset({"mappedFileSizeCommitLog"})  # as a broker.conf says it: one cut file cannot overrule it
    sizes = StoreReader(root, said).sequence_findings()
    expected = f"segment is {last.physical_offset + 30} bytes, expected {SEG}"
    assert [(f.offset, f.reason) for f in sizes] == [(0, expected)]


def test_missing_blank_marker_in_non_last_segment(tmp_path):
    root, stored = _store(tmp_path, _simple(80))
    first = _segment(root, 0)
    raw = first.read_bytes()
    _, end, _ = scan_buffer(raw, 0)
    _patch(first, end.pos, bytes(8))
    offsets, findings = _scan(root)
    assert offsets == [m.physical_offset for m in stored]
    assert [(f.offset, f.bytes) for f in findings] == [(end.pos, SEG - end.pos)]
    assert findings[0].reason == (f"records stop at offset {end.pos}, {SEG - end.pos} bytes before the segment's end, "
                                  "without an end marker while later segments hold records")
    assert findings[0].kind == "lost-tail"


def test_gap_in_segment_sequence(tmp_path):
    root, stored = _store(tmp_path, _simple(120))
    _segment(root, 1).unlink()
    reader = StoreReader(root, _cfg())
    gaps = reader.sequence_findings()
    assert [(f.offset, f.bytes) for f in gaps] == [(SEG, SEG)]
    assert gaps[0].reason == f"gap in the segment sequence: next segment starts at {2 * SEG}"
    offsets, _ = _scan(root)
    assert offsets == [m.physical_offset for m in stored if not SEG <= m.physical_offset < 2 * SEG]


def test_magic_inside_a_body_makes_no_phantom_record(tmp_path):
    def carrier_body(claimed: int) -> bytes:
        fake = message.encode(Message(topic="Fake", body=b"x", born_host=HOST, store_host=HOST,
                                      physical_offset=claimed))
        return fake * 3

    def build(claimed: int) -> tuple[Path, list[Message]]:
        msgs = [*_simple(3), Message(topic="T", body=carrier_body(claimed), born_host=HOST, store_host=HOST)]
        return _store(tmp_path / str(claimed), msgs + _simple(3))

    _, first = build(0)
    fake_len = len(carrier_body(0)) // 3
    # the second embedded copy claims its own position: the strongest possible impostor
    root, stored = build(first[3].physical_offset + message.HEADER_V4_LEN + fake_len)
    assert _scan(root) == ([m.physical_offset for m in stored], [])
    # damage the carrier's header: the scan reports it and resynchronises, never inventing the carrier
    carrier = stored[3]
    _patch(_segment(root, 0), carrier.physical_offset + 4, b"\x00\x00\x00\x00")
    offsets, findings = _scan(root)
    assert carrier.physical_offset not in offsets and stored[4].physical_offset in offsets
    assert findings[0].offset == carrier.physical_offset


def test_scan_from_numpy_buffer_matches_store_scan(tmp_path):
    root, stored = _store(tmp_path, _simple(15))
    raw = np.frombuffer(_segment(root, 0).read_bytes(), dtype=np.uint8).tobytes()
    batches, end, findings = scan_buffer(raw, 0)
    assert [int(o) for b in batches for o in b.offsets] == [m.physical_offset for m in stored]
    assert end.kind == END_ZEROS and findings == []
