"""Exact-byte tests of the format codecs (oracle values come from Java 17 and the 4.9.7 layout)."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from rmqtool.errors import RmqError
from rmqtool.structures import checkpoint, consumequeue, index
from rmqtool.structures.commitlog import batch, crc, message, msgid, properties, sysflag
from rmqtool.structures.commitlog.delay import SCHEDULE_TOPIC, deliver_timestamp, parse_delay_levels
from rmqtool.structures.commitlog.hosts import parse_host
from rmqtool.structures.commitlog.message import Blank, Corrupt, Message
from rmqtool.structures.javahash import java_string_hash

V4_BORN, V4_STORE = parse_host("192.0.2.1:30000"), parse_host("198.51.100.7:10911")
V6_BORN, V6_STORE = parse_host("[2001:db8::17]:30001"), parse_host("[2001:db8::7]:10911")


def _msg(**kw) -> Message:
    base = dict(topic="OrderTopic", body=b"hello", properties_string="TAGS\x01TagA", queue_id=3, flag=7,
                queue_offset=11, physical_offset=518, born_timestamp=1700000000000, born_host=V4_BORN,
                store_timestamp=1700000000123, store_host=V4_STORE, reconsume_times=2,
                prepared_transaction_offset=99, body_crc=crc.body_crc(b"hello"))
    base.update(kw)
    return Message(**base).with_host_flags()


# java.lang.String.hashCode, printed by Java 17
JAVA_HASHES = {"": 0, "TagA": 2598919, "🚀rocket": -1579737481, "中文键": 20076404,
               "OrderTopic#order-1": -344427120, "polygenelubricants": -2147483648}


@pytest.mark.parametrize(("text", "expected"), JAVA_HASHES.items())
def test_java_string_hash_matches_java(text, expected):
    assert java_string_hash(text) == expected


def test_index_key_hash_of_integer_min_value_is_zero():
    assert index.key_hash("polygenelubricants") == 0
    assert index.key_hash("OrderTopic#order-1") == 344427120
    assert index.slot_of(344427120, 64) == 344427120 % 64


def test_body_crc_is_java_crc32_masked_positive():
    assert crc.body_crc(b"hello rocketmq") == 1932557065  # java.util.zip.CRC32 & 0x7FFFFFFF
    assert crc.body_crc(b"") == 0


def test_v1_record_layout_byte_by_byte():
    m = _msg()
    raw = message.encode(m)
    assert len(raw) == 84 + 4 + 5 + 1 + 10 + 2 + 9 == message.encoded_len(m)
    total, magic, body_crc, qid, flag, qoff, phys, sysf, born = struct.unpack_from(">iiiiiqqiq", raw, 0)
    assert (total, magic, body_crc, qid, flag, qoff, phys, sysf, born) == (
        len(raw), -626843481, crc.body_crc(b"hello"), 3, 7, 11, 518, 0, 1700000000000)
    assert raw[48:52] == bytes([192, 0, 2, 1]) and struct.unpack_from(">i", raw, 52)[0] == 30000
    assert struct.unpack_from(">q", raw, 56)[0] == 1700000000123
    assert raw[64:68] == bytes([198, 51, 100, 7]) and struct.unpack_from(">i", raw, 68)[0] == 10911
    assert struct.unpack_from(">iqi", raw, 72) == (2, 99, 5)
    assert raw[88:93] == b"hello" and raw[93] == 10 and raw[94:104] == b"OrderTopic"
    assert struct.unpack_from(">h", raw, 104)[0] == 9 and raw[106:] == b"TAGS\x01TagA"


def test_ipv6_hosts_follow_sysflag_bits():
    m = _msg(born_host=V6_BORN, store_host=V6_STORE)
    assert m.sys_flag == sysflag.BORN_HOST_V6 | sysflag.STORE_HOST_V6
    raw = message.encode(m)
    assert len(raw) == message.encoded_len(_msg()) + 24
    assert raw[48:64] == V6_BORN.address and struct.unpack_from(">i", raw, 64)[0] == 30001
    got = message.decode(raw)
    assert got == m.__class__(**{**m.__dict__, "store_size": len(raw)})
    assert str(got.born_host) == "[2001:db8::17]:30001" and str(got.store_host) == "[2001:db8::7]:10911"


def test_host_flag_mismatch_refused_by_encoder():
    m = Message(topic="T", born_host=V6_BORN)
    with pytest.raises(ValueError):
        message.encode(m)


def test_decode_round_trip_and_msgid():
    m = _msg(physical_offset=0)
    got = message.decode(message.encode(m), expected_offset=0)
    assert isinstance(got, Message)
    assert got.msg_id == "C633640700002A9F0000000000000000"  # the golden store's first msgId
    assert got.properties == {"TAGS": "TagA"}


def test_v2_record_has_two_byte_topic_length():
    topic = "t" * 200
    m = _msg(topic=topic, magic=message.MAGIC_V2)
    raw = message.encode(m)
    assert struct.unpack_from(">i", raw, 4)[0] == -626843477
    assert struct.unpack_from(">h", raw, 93)[0] == 200 and raw[95:295] == topic.encode()
    got = message.decode(raw)
    assert isinstance(got, Message) and got.topic == topic and got.magic == message.MAGIC_V2


def test_decode_reports_corruption_as_data():
    raw = bytearray(message.encode(_msg()))
    assert message.decode(bytes(8)).reason.startswith("bad magic")
    assert message.decode(raw[:5]) == Corrupt("truncated record header", 5)
    bad_crc = bytearray(raw)
    bad_crc[88] ^= 0xFF
    assert message.decode(bad_crc).reason.startswith("body CRC mismatch")
    assert isinstance(message.decode(bad_crc, verify_crc=False), Message)
    assert message.decode(raw, expected_offset=0).reason == "physicalOffset field 518 != position 0"
    short = bytearray(raw)
    struct.pack_into(">i", short, 0, len(raw) + 4)
    assert message.decode(bytes(short) + bytes(4)).reason.startswith("record length mismatch")
    assert message.decode(message.encode_blank(300)) == Blank(300)


def test_properties_parse_keeps_empty_pairs_java_drops_them():
    text = "a\x01\x02\x01x\x02KEYS\x01k1 k2\x02TAGS\x01T\x02"
    assert properties.parse(text) == {"a": "", "": "x", "KEYS": "k1 k2", "TAGS": "T"}
    assert properties.parse_java(text) == {"KEYS": "k1 k2", "TAGS": "T"}
    assert properties.keys_of(properties.parse(text)) == ["k1", "k2"]


def test_properties_build_has_no_trailing_separator():
    assert properties.build({"A": "1", "B": "2"}) == "A\x011\x02B\x012"
    assert properties.build({}) == ""


def test_java_hashmap_order_matches_java():
    keys = ["trace", "UNIQ_KEY", "CLUSTER", "userId", "TAGS", "REAL_TOPIC", "REAL_QID", "DELAY", "KEYS", "WAIT"]
    # java.util.HashMap.keySet() order printed by Java 17 for these insertions
    assert properties.java_hashmap_order(keys) == ["REAL_TOPIC", "trace", "KEYS", "UNIQ_KEY", "CLUSTER", "userId",
                                                   "DELAY", "WAIT", "TAGS", "REAL_QID"]


def test_msgid_create_and_decode():
    assert msgid.create(V4_STORE, 518) == "C633640700002A9F0000000000000206"
    host, off = msgid.decode("c633640700002a9f0000000000000206")
    assert (str(host), off) == ("198.51.100.7:10911", 518)
    long_id = msgid.create(V6_STORE, 1)
    assert len(long_id) == 56 and msgid.decode(long_id) == (V6_STORE, 1)


@pytest.mark.parametrize(
    "bad", ["", "C6336407", "Z633640700002A9F0000000000000206", "C633640700002A9F00000000000002060"])
def test_malformed_msgid_is_refused(bad):
    with pytest.raises(RmqError):
        msgid.decode(bad)


def test_client_batch_codec_round_trip_and_layout():
    items = [batch.BatchItem(1, b"ab", "K\x01v"), batch.BatchItem(0, b"", "")]
    raw = batch.encode(items)
    assert struct.unpack_from(">iiiii", raw, 0) == (4 * 5 + 2 + 2 + 3, 0, 0, 1, 2)
    assert batch.decode(raw) == items
    with pytest.raises(ValueError):
        batch.decode(raw[:-1])


def test_consume_queue_entry_is_20_big_endian_bytes():
    raw = consumequeue.encode_entries([518, 0], [230, 0], [-1579737481, 0])
    assert raw[:20] == struct.pack(">qiq", 518, 230, -1579737481) and len(raw) == 40
    entries = consumequeue.decode_entries(raw)
    assert entries["commitLogOffset"].tolist() == [518, 0]
    assert consumequeue.valid_mask(entries).tolist() == [True, False]
    assert consumequeue.written_count(entries) == 1


def test_tags_code_rules():
    levels = parse_delay_levels("1s 5s 10s")
    assert consumequeue.tags_code("T", {"TAGS": "TagA"}, 1000, levels) == 2598919
    assert consumequeue.tags_code("T", {}, 1000, levels) == 0
    assert consumequeue.tags_code(SCHEDULE_TOPIC, {"DELAY": "2", "TAGS": "x"}, 1000, levels) == 6000
    assert consumequeue.tags_code(SCHEDULE_TOPIC, {"DELAY": "9"}, 1000, levels) == 11000  # clamped to level 3
    assert deliver_timestamp(7, 1000, levels) == 2000  # unknown level: one second


def test_delay_levels_parse():
    assert parse_delay_levels("1s 5m 2h 1d") == [1000, 300000, 7200000, 86400000]
    with pytest.raises(ValueError):
        parse_delay_levels("1s 5x")


def test_index_layout_and_file_size():
    assert index.file_len(64, 256) == 5416 == 40 + 64 * 4 + 256 * 20
    assert index.file_len(index.DEFAULT_HASH_SLOTS, index.DEFAULT_INDEX_NUM) == 420000040
    buf = bytearray(index.file_len(4, 8))
    struct.pack_into(">qqqqii", buf, 0, 10, 20, 30, 40, 2, 3)
    struct.pack_into(">i", buf, 40 + 4, 2)
    struct.pack_into(">iqii", buf, 40 + 16 + 2 * 20, 77, 518, 1, 0)
    assert index.header_to_json(index.decode_header(buf)) == {
        "beginTimestamp": 10, "endTimestamp": 20, "beginPhyOffset": 30, "endPhyOffset": 40,
        "hashSlotCount": 2, "indexCount": 3}
    assert index.decode_slots(buf, 4).tolist() == [0, 2, 0, 0]
    assert index.decode_entries(buf, 4, 3)[2].tolist() == (77, 518, 1, 0)


def test_checkpoint_49_and_5x():
    cp = checkpoint.Checkpoint(1795347795677, 1795347795677, 1795347795652)
    raw = checkpoint.encode(cp)
    assert len(raw) == 4096 and raw[:24] == struct.pack(">qqq", *[1795347795677] * 2, 1795347795652)
    assert checkpoint.decode(raw) == cp and cp.to_json() == {
        "physicMsgTimestamp": 1795347795677, "logicsMsgTimestamp": 1795347795677,
        "indexMsgTimestamp": 1795347795652}
    five = checkpoint.Checkpoint(1, 2, 3, 4, 5)
    assert checkpoint.decode(checkpoint.encode(five)) == five
    assert cp.min_timestamp() == 1795347795677 - 3000
    assert cp.min_timestamp(index_safe=True) == 1795347795652 - 3000


def test_tail_crc32_property_of_5x_records():
    assert crc.encode_tail_crc(1234567890) == b"__CRC32#\x010987654321\x02"
    assert crc.encode_tail_crc(12) == b"__CRC32#\x012100000000\x02"
    body = b"x" * 30
    good = body + crc.encode_tail_crc(zlib.crc32(body) & 0x7FFFFFFF)
    assert crc.check_tail_crc(good) is True
    assert crc.check_tail_crc(b"y" + good[1:]) is False
    assert crc.check_tail_crc(body + b"z" * 20) is None


def test_sysflag_helpers():
    f = sysflag.COMPRESSED | (2 << 8) | sysflag.TRANSACTION_ROLLBACK | sysflag.MULTI_TAGS | sysflag.INNER_BATCH
    assert sysflag.transaction_name(f) == "rollback" and sysflag.compression_name(f) == "zstd"
    assert sysflag.is_multi_tags(f) and sysflag.is_inner_batch(f)
    assert sysflag.with_transaction_type(f, sysflag.TRANSACTION_COMMIT) & 0xC == 0x8
    assert sysflag.compression_name(sysflag.COMPRESSED) == "zlib"
    assert sysflag.describe(f) == ["compressed(zstd)", "multi-tags", "transaction-rollback", "inner-batch"]
    assert not sysflag.enters_consume_queue(sysflag.TRANSACTION_PREPARED)
    assert sysflag.enters_consume_queue(sysflag.TRANSACTION_COMMIT)


def test_header_dtype_agrees_with_struct_codec():
    for b6 in (False, True):
        for s6 in (False, True):
            assert message.header_dtype(b6, s6).itemsize == message.HEADER_STRUCTS[(b6, s6)].size
    raw = message.encode(_msg())
    row = np.frombuffer(raw[:88], dtype=message.header_dtype(False, False))[0]
    assert (int(row["queueOffset"]), int(row["storeTimestamp"]), int(row["bodyLength"])) == (11, 1700000000123, 5)


def test_layout_lengths_equal_their_dtypes():
    from rmqtool.structures import consumequeue, index

    assert consumequeue.ENTRY_DTYPE.itemsize == consumequeue.ENTRY_LEN
    sizes = (index.HEADER_DTYPE.itemsize, index.SLOT_DTYPE.itemsize, index.ENTRY_DTYPE.itemsize)
    assert sizes == (index.HEADER_LEN, index.SLOT_LEN, index.ENTRY_LEN)


def test_cli_start_and_msgid_lookup_do_not_load_numpy():
    """One query per process is start-up bound: the lookup path stays free of numpy and numba."""
    import subprocess
    import sys

    code = ("import sys; from rmqtool.cli import app; from rmqtool.ops import query; "
            "print(any(m.split('.')[0] in ('numpy', 'numba') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
