"""The two read speeds tell one truth: Arrow rows of the one scan (`ops.log_rows` -> `io.jsonl`)
equal the per-record decoder's objects (`DecodedMessage.to_json`) field for field, with the same
findings in the same places, on broker-written, fixture, random and damaged stores."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.message_store import MessageStore
from rmqtool.engine.reader import StoreReader, open_reader
from rmqtool.files.paths import offset_name
from rmqtool.io.jsonl import BODY_FORMATS
from rmqtool.ops.log_rows import log_lines
from rmqtool.ops.views import decode_log
from rmqtool.report import Finding
from rmqtool.structures.commitlog import message, properties
from rmqtool.structures.commitlog.crc import body_crc
from rmqtool.structures.commitlog.hosts import parse_host
from rmqtool.structures.commitlog.message import Message
from rmqtool.structures.commitlog.selection import Selection

SEG = 4096


def _cfg(seg: int = SEG) -> StoreConfig:
    cfg = StoreConfig()
    cfg.mappedFileSizeCommitLog, cfg.mappedFileSizeConsumeQueue = seg, 400
    cfg.maxHashSlotNum, cfg.maxIndexNum = 8, 32
    return cfg


def _arrow(reader: StoreReader, body: str, topic: str | None = None, **kw) -> list[dict]:
    out: list[dict] = []
    for item in log_lines(reader, body, selection=Selection(topic=topic) if topic is not None else None, **kw):
        if isinstance(item, Finding):
            out.append({"error": item.reason, **item.to_json()})
        else:
            out += [json.loads(line) for line in bytes(item).splitlines()]
    return out


def _per_record(reader: StoreReader, body: str, **kw) -> list[dict]:
    return [{"error": item.reason, **item.to_json()} if isinstance(item, Finding) else item.to_json(body)
            for item in decode_log(reader, **kw)]


def _assert_agree(reader: StoreReader, bodies=BODY_FORMATS, **kw) -> list[dict]:
    for body in bodies:
        arrow, slow = _arrow(reader, body, **kw), _per_record(reader, body, **kw)
        assert len(arrow) == len(slow)
        for a, s in zip(arrow, slow, strict=True):
            assert a == s
    return slow


def _store(root: Path, msgs: list[Message], seg: int = SEG) -> StoreReader:
    with MessageStore(root, _cfg(seg)) as store:
        for m in msgs:
            assert store.put_message(m, as_stored=True).ok
    return StoreReader(root, _cfg(seg))


def _raw_store(root: Path, msgs: list[Message], seg: int) -> StoreReader:
    """Records encoded straight into segments (v2 records too, which a 4.9 engine refuses), a blank
    marker where the next one does not fit."""
    (root / "commitlog").mkdir(parents=True)
    segments: list[bytearray] = [bytearray(seg)]
    pos = 0
    for m in msgs:
        m = m.with_host_flags()
        m.body_crc, m.store_size = body_crc(m.body), message.encoded_len(m)
        if pos + m.store_size + message.BLANK_MARKER_LEN > seg:
            segments[-1][pos : pos + message.BLANK_MARKER_LEN] = message.encode_blank(seg - pos)
            segments.append(bytearray(seg))
            pos = 0
        m.physical_offset = (len(segments) - 1) * seg + pos
        message.encode_into(segments[-1], pos, m)
        pos += m.store_size
    for k, data in enumerate(segments):
        (root / "commitlog" / offset_name(k * seg)).write_bytes(bytes(data))
    return StoreReader(root, _cfg(seg))


def test_rows_equal_decoder_on_fixture_store(fixture_store, fixture_conf):
    rows = _assert_agree(open_reader(fixture_store, fixture_conf))
    assert len(rows) == 420


def test_rows_equal_decoder_on_golden_stores(golden_basic):
    rows = _assert_agree(open_reader(golden_basic / "store", golden_basic / "broker.conf"))
    assert len(rows) == 1500
    v5 = golden_basic.parent / "v5-rocksdb"
    rows = _assert_agree(open_reader(v5 / "store", v5 / "broker.conf"), bodies=("base64",))
    expected = json.loads((v5 / "expected.json").read_text())["messages"]
    assert [r["msgId"] for r in rows if "msgId" in r] == [m["msgId"] for m in expected]


def test_rows_equal_decoder_from_an_offset_with_count_and_topic(golden_basic):
    reader = open_reader(golden_basic / "store", golden_basic / "broker.conf")
    rows = _assert_agree(reader, bodies=("text",), from_offset=131072, count=37, topic="OrderTopic")
    assert len(rows) == 37 and {r["topic"] for r in rows} == {"OrderTopic"}
    assert rows[0]["commitLogOffset"] >= 131072


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=600), st.sampled_from(["A", "Topic-β", "x" * 120, "L" * 200]),
                          st.booleans(), st.booleans(),
                          st.dictionaries(st.sampled_from(["TAGS", "KEYS", "k", "UNIQ_KEY"]), st.text(max_size=8)),
                          st.sampled_from([0, 0x8, 0x4, 0xC])), max_size=30))
def test_rows_equal_decoder_on_random_stores(tmp_path_factory, rows):
    """IPv6 hosts, v2 records (topics over 127 bytes), transactions, blanks between segments."""
    msgs = [Message(topic=t, body=b, properties_string=properties.build(p), sys_flag=tx,
                    magic=message.MAGIC_V2 if len(t.encode()) > message.MAX_TOPIC_LEN_V1 else message.MAGIC_V1,
                    born_host=parse_host("[::1]:1" if v6b else "1.2.3.4:5"),
                    store_host=parse_host("[fe80::2]:7" if v6s else "5.6.7.8:9"), store_timestamp=1000 + i)
            for i, (b, t, v6b, v6s, p, tx) in enumerate(rows)]
    reader = _raw_store(tmp_path_factory.mktemp("r") / "s", msgs, 2048)
    assert len(_assert_agree(reader, bodies=("base64", "text"))) == len(msgs)


def _damage(path: Path, at: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(data)


def test_rows_equal_decoder_on_a_damaged_store(tmp_path):
    host = parse_host("10.0.0.1:9876")
    msgs = [Message(topic=f"T{i % 3}", body=bytes([i % 251]) * 50, properties_string=f"TAGS\x01t{i}",
                    queue_id=i % 2, born_host=host, store_host=host, store_timestamp=1000 + i) for i in range(120)]
    root = tmp_path / "s"
    _store(root, msgs)
    seg0, seg1 = root / "commitlog" / offset_name(0), root / "commitlog" / offset_name(SEG)
    _damage(seg0, 300, b"\xff")  # a bit flip in a body: CRC mismatch
    _damage(seg0, 1000, bytes(200))  # a zeroed run across records
    _damage(seg1, 2000, b"garbage!" * 8)
    os.remove(root / "commitlog" / offset_name(2 * SEG))  # a missing middle segment
    rows = _assert_agree(StoreReader(root, _cfg()))
    errors = [r for r in rows if "error" in r]
    assert errors and any(r["file"].endswith(offset_name(2 * SEG)) and r["kind"] == "missing-segment"
                          for r in errors)
    assert [r["commitLogOffset"] for r in rows if "msgId" in r] == sorted(
        r["commitLogOffset"] for r in rows if "msgId" in r)


def test_rows_equal_decoder_on_one_segment_given_by_path(tmp_path, fixture_store):
    seg = tmp_path / "commitlog" / offset_name(65536)
    seg.parent.mkdir()
    shutil.copy(fixture_store / "commitlog" / offset_name(65536), seg)
    rows = _assert_agree(StoreReader(seg), bodies=("hex",))
    assert rows and all(65536 <= r["commitLogOffset"] < 131072 for r in rows if "msgId" in r)


def test_inspect_and_decode_give_the_same_verdict_on_a_damaged_record(fixture_store):
    from rmqtool.structures.commitlog.template import record_template

    buf = bytearray((fixture_store / "commitlog" / offset_name(0)).read_bytes())
    first = message.decode(buf, 0)
    assert isinstance(first, Message)
    buf[message.header_len(first.sys_flag)] ^= 0x01  # the first body byte
    spans, problem = record_template(buf, 0)
    verdict = message.decode(buf, 0)
    assert isinstance(verdict, message.Corrupt) and problem == verdict.reason
    assert problem.startswith("body CRC mismatch")
    assert [s.name for s in spans][-2:] == ["propertiesLength", "properties"]
    buf[message.TOTAL_SIZE_OFFSET + 3] ^= 0x04  # totalSize no longer matches the fields
    assert record_template(buf, 0)[1] == message.decode(buf, 0).reason
