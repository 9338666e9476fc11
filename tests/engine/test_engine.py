"""The store engine: the broker's append rules, dispatch, lock/abort/checkpoint, reopen."""

from __future__ import annotations

import errno
import os
import zlib
from pathlib import Path

import numpy as np
import pytest
from lockholder import lock_held_elsewhere

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.message_store import MessageStore
from rmqtool.engine.producer import build_message, client_batch
from rmqtool.engine.reader import StoreReader
from rmqtool.engine.results import PutStatus
from rmqtool.errors import RmqError
from rmqtool.io.sources import Source
from rmqtool.load.records import LoadOptions
from rmqtool.load.writer import load
from rmqtool.structures import consumequeue, index
from rmqtool.structures.commitlog import batch, message, msgid, properties, sysflag
from rmqtool.structures.commitlog.delay import SCHEDULE_TOPIC
from rmqtool.structures.commitlog.hosts import parse_host
from rmqtool.structures.commitlog.message import Message

BORN = parse_host("10.0.0.1:4000")
STORE = parse_host("10.0.0.9:10911")
LEVELS_MS = [1000, 5000, 10000]


def small_config(segment: int = 4096) -> StoreConfig:
    cfg = StoreConfig()
    cfg.mappedFileSizeCommitLog = segment
    cfg.mappedFileSizeConsumeQueue = 10 * consumequeue.ENTRY_LEN
    cfg.maxHashSlotNum, cfg.maxIndexNum = 16, 8
    cfg.messageDelayLevel = "1s 5s 10s"
    cfg.maxMessageSize = 2048
    return cfg


def msg(topic: str = "T", body: bytes = b"hello", props: str = "", queue: int = 0, tx: int = 0) -> Message:
    return Message(topic=topic, body=body, properties_string=props, queue_id=queue, sys_flag=tx,
                   born_timestamp=1_700_000_000_000, born_host=BORN, store_host=STORE)


def records(root: Path, cfg: StoreConfig) -> list[Message]:
    reader = StoreReader(root, cfg)
    out = []
    for chunk in reader.scan():
        assert not chunk.findings
        if chunk.batch is not None:
            out += [chunk.batch.message(i) for i in range(len(chunk.batch))]
    return out


def queue(root: Path, cfg: StoreConfig, topic: str, qid: int) -> np.ndarray:
    reader = StoreReader(root, cfg)
    parts = [entries for _, entries in reader.consume_queue(topic, qid)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=consumequeue.ENTRY_DTYPE)


def index_entries(root: Path, cfg: StoreConfig) -> list[tuple[int, int]]:
    """(keyHash, phyOffset) of every used entry of every index file, in file order."""
    out = []
    for path in sorted((root / "index").iterdir()):
        buf = path.read_bytes()
        count = int(index.decode_header(buf)["indexCount"])
        e = index.decode_entries(buf, cfg.maxHashSlotNum, count)[1:]
        out += list(zip(e["keyHash"].tolist(), e["phyOffset"].tolist(), strict=True))
    return out


@pytest.fixture
def cfg() -> StoreConfig:
    return small_config()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "store"


# ---- append rules --------------------------------------------------------------------------

def test_store_sets_store_timestamp_body_crc_and_offsets(root, cfg):
    with MessageStore(root, cfg) as store:
        first = store.put_message(msg(body=b"abc"))
        second = store.put_message(msg(body=b"defg"))
    got = records(root, cfg)
    assert [m.physical_offset for m in got] == [0, first.wrote_bytes]
    assert got[0].body_crc == zlib.crc32(b"abc") & 0x7FFFFFFF
    assert got[0].store_timestamp == first.store_timestamp > 0
    assert second.msg_id == msgid.create(STORE, first.wrote_bytes)
    assert first.wrote_bytes == message.record_len(0, 3, 1, 0)


@pytest.mark.parametrize(("topic", "props", "field"), [("T", "a\x01\ud800", "properties"), ("T\udcff", "", "topic")])
def test_a_lone_surrogate_is_refused_not_a_unicode_encode_error(root, cfg, topic, props, field):
    with MessageStore(root, cfg) as store:
        first = store.put_message(msg(body=b"abc"))
        bad = store.put_message(msg(topic=topic, props=props))
        after = store.put_message(msg(body=b"defg"))
    assert (bad.status, bad.reason) == (PutStatus.MESSAGE_ILLEGAL, f"{field}: not UTF-8 text")
    assert [m.body for m in records(root, cfg)] == [b"abc", b"defg"]
    assert after.wrote_offset == first.wrote_bytes


def test_queue_offsets_count_per_topic_queue(root, cfg):
    with MessageStore(root, cfg) as store:
        results = [store.put_message(msg(topic=t, queue=q)) for t, q in
                   [("A", 0), ("A", 1), ("A", 0), ("B", 0), ("A", 0)]]
    assert [r.queue_offset for r in results] == [0, 0, 1, 0, 2]
    entries = queue(root, cfg, "A", 0)
    assert entries["commitLogOffset"].tolist() == [results[i].wrote_offset for i in (0, 2, 4)]
    assert entries["size"].tolist() == [results[i].wrote_bytes for i in (0, 2, 4)]


def test_record_that_does_not_fit_rolls_with_blank_marker(root, cfg):
    body = b"x" * 1000
    with MessageStore(root, cfg) as store:
        offsets = [store.put_message(msg(body=body)).wrote_offset for _ in range(5)]
    size = message.record_len(0, 1000, 1, 0)
    per_segment = (4096 - message.BLANK_MARKER_LEN) // size
    assert offsets[:per_segment] == [i * size for i in range(per_segment)]
    assert offsets[per_segment] == 4096
    seg0 = (root / "commitlog" / "00000000000000000000").read_bytes()
    blank_at = per_segment * size
    assert message.decode(seg0, blank_at) == message.Blank(4096 - blank_at)
    assert message.PREFIX.unpack_from(seg0, blank_at) == (4096 - blank_at, message.BLANK_MAGIC)


def test_record_leaving_less_than_eight_bytes_rolls(root, cfg):
    size = message.record_len(0, 0, 1, 0)
    cfg.maxMessageSize = 8192
    with MessageStore(root, cfg) as store:
        assert store.put_message(msg(body=b"y" * (4096 - size - size - 4))).ok  # leaves room for size + 4 bytes
        assert store.put_message(msg(body=b"")).wrote_offset == 4096


def test_prepared_and_rollback_get_queue_offset_zero_and_stay_out_of_consume_queues(root, cfg):
    with MessageStore(root, cfg) as store:
        plain = store.put_message(msg(props="UNIQ_KEY\x01u1"))
        prepared = store.put_message(msg(props="UNIQ_KEY\x01u2", tx=sysflag.TRANSACTION_PREPARED))
        rollback = store.put_message(msg(props="UNIQ_KEY\x01u3", tx=sysflag.TRANSACTION_ROLLBACK))
        commit = store.put_message(msg(props="UNIQ_KEY\x01u4", tx=sysflag.TRANSACTION_COMMIT))
    assert [r.queue_offset for r in (plain, prepared, rollback, commit)] == [0, 0, 0, 1]
    assert queue(root, cfg, "T", 0)["commitLogOffset"].tolist() == [plain.wrote_offset, commit.wrote_offset]
    indexed = {phy for _, phy in index_entries(root, cfg)}
    assert indexed == {plain.wrote_offset, prepared.wrote_offset, commit.wrote_offset}  # rollback is not indexed


def test_delay_level_moves_message_to_schedule_topic_in_hashmap_order(root, cfg):
    props = "KEYS\x01k1 k2\x02UNIQ_KEY\x017F0000010001\x02TAGS\x01TagA\x02DELAY\x013"
    with MessageStore(root, cfg) as store:
        result = store.put_message(msg(topic="OrderTopic", props=props, queue=2))
    (got,) = records(root, cfg)
    assert (got.topic, got.queue_id) == (SCHEDULE_TOPIC, 2)
    # java.util.HashMap iteration order, from Java 17 with the broker's parse and rebuild
    assert got.properties_string == ("REAL_TOPIC\x01OrderTopic\x02KEYS\x01k1 k2\x02UNIQ_KEY\x017F0000010001\x02"
                                     "DELAY\x013\x02TAGS\x01TagA\x02REAL_QID\x012")
    entries = queue(root, cfg, SCHEDULE_TOPIC, 2)
    assert entries["tagsCode"].tolist() == [result.store_timestamp + 10000]


def test_delay_level_above_maximum_is_clamped_and_rewritten(root, cfg):
    props = "DELAY\x0199\x02UNIQ_KEY\x01AB\x02a\x011\x02b\x012\x02c\x013\x02d\x014\x02e\x015\x02f\x016\x02g\x017" \
            "\x02h\x018\x02i\x019\x02j\x0110"
    big = small_config()
    big.messageDelayLevel = " ".join(["1s"] * 18)
    with MessageStore(root, big) as store:
        store.put_message(msg(topic="T", props=props))
    (got,) = records(root, big)
    assert got.queue_id == 17
    assert got.properties_string == ("a\x011\x02b\x012\x02c\x013\x02d\x014\x02e\x015\x02f\x016\x02g\x017\x02h\x018"
                                     "\x02i\x019\x02j\x0110\x02REAL_TOPIC\x01T\x02UNIQ_KEY\x01AB\x02DELAY\x0118"
                                     "\x02REAL_QID\x010")


def test_delayed_prepared_message_is_not_rewritten(root, cfg):
    with MessageStore(root, cfg) as store:
        store.put_message(msg(props="DELAY\x012", tx=sysflag.TRANSACTION_PREPARED))
    (got,) = records(root, cfg)
    assert (got.topic, got.properties_string) == ("T", "DELAY\x012")


def test_topic_over_127_bytes_is_refused_and_writes_nothing(root, cfg):
    with MessageStore(root, cfg) as store:
        result = store.put_message(msg(topic="é" * 64))  # 64 chars, 128 bytes
        assert result.status is PutStatus.MESSAGE_ILLEGAL
        assert store.commitlog.max_offset == 0
    assert records(root, cfg) == []


def test_properties_over_32767_bytes_are_refused(root, cfg):
    roomy = small_config(segment=1 << 20)
    roomy.maxMessageSize = 1 << 20
    with MessageStore(root, roomy) as store:
        assert store.put_message(msg(props="a\x01" + "é" * 16383)).status is PutStatus.PROPERTIES_SIZE_EXCEEDED
        assert store.put_message(msg(props="a\x01" + "x" * 32766)).status is PutStatus.MESSAGE_ILLEGAL
        assert store.put_message(msg(props="a\x01" + "x" * 32765)).ok


def test_body_over_max_message_size_is_refused(root, cfg):
    with MessageStore(root, cfg) as store:
        assert store.put_message(msg(body=b"z" * 2049)).status is PutStatus.MESSAGE_ILLEGAL
        assert store.put_message(msg(body=b"z" * 2048)).ok


def test_topic_that_names_a_path_is_refused(root, cfg):
    with MessageStore(root, cfg) as store:
        for topic in ("..", "a/b", ""):
            assert store.put_message(msg(topic=topic)).status is PutStatus.MESSAGE_ILLEGAL
    assert not (root / "consumequeue").exists() or not any((root / "consumequeue").iterdir())


# ---- batches ---------------------------------------------------------------------------------

def _items(n: int, props: str = "UNIQ_KEY\x01k{i}") -> list[batch.BatchItem]:
    return [batch.BatchItem(i, f"body-{i}".encode(), props.format(i=i)) for i in range(n)]


def test_batch_records_are_contiguous_with_consecutive_queue_offsets(root, cfg):
    with MessageStore(root, cfg) as store:
        store.put_message(msg(topic="B", queue=1))
        result = store.put_batch("B", 1, batch.encode(_items(3)), born_timestamp=5, born_host=BORN, store_host=STORE)
    got = records(root, cfg)[1:]
    assert [m.queue_offset for m in got] == [1, 2, 3]
    assert [m.physical_offset for m in got] == [result.wrote_offset, got[0].physical_offset + got[0].store_size,
                                                 got[1].physical_offset + got[1].store_size]
    assert result.msg_id == ",".join(msgid.create(STORE, m.physical_offset) for m in got)
    assert {m.store_timestamp for m in got} == {result.store_timestamp}
    assert [m.flag for m in got] == [0, 1, 2] and [m.born_timestamp for m in got] == [5, 5, 5]


def test_batch_records_equal_single_record_encoding(root, cfg):
    """The compiled batch encoder and the per-record encoder write the same bytes."""
    items = _items(2, props="TAGS\x01t{i}")
    with MessageStore(root, cfg) as store:
        store.put_batch("B", 0, batch.encode(items), born_timestamp=5, born_host=BORN, store_host=STORE)
    seg = (root / "commitlog" / "00000000000000000000").read_bytes()
    for m in records(root, cfg):
        assert seg[m.physical_offset : m.physical_offset + m.store_size] == message.encode(m)
        assert m.body_crc == zlib.crc32(m.body) & 0x7FFFFFFF


@pytest.mark.parametrize("born_host", [BORN, parse_host("[fe80::1]:4000")], ids=["v4", "v6"])
def test_batches_of_one_store_each_carry_their_own_queue_and_timestamps(root, cfg, born_host):
    """The header a batch shares is kept between batches: queue id and both timestamps are each batch's own."""
    with MessageStore(root, cfg) as store:
        for queue, born in ((0, 5), (3, 7), (0, 9)):
            store.put_batch("B", queue, batch.encode(_items(2, props="TAGS\x01t{i}")), born_timestamp=born,
                            born_host=born_host, store_host=STORE, reconsume_times=queue)
    seg = (root / "commitlog" / "00000000000000000000").read_bytes()
    got = records(root, cfg)
    assert [(m.queue_id, m.queue_offset, m.born_timestamp, m.reconsume_times) for m in got] == [
        (0, 0, 5, 0), (0, 1, 5, 0), (3, 0, 7, 3), (3, 1, 7, 3), (0, 2, 9, 0), (0, 3, 9, 0)]
    for m in got:
        assert m.store_timestamp > 0
        assert seg[m.physical_offset : m.physical_offset + m.store_size] == message.encode(m)


def test_batch_properties_are_appended_with_a_separator_only_when_needed(root, cfg):
    items = [batch.BatchItem(0, b"a", "x\x011"), batch.BatchItem(0, b"b", "y\x012\x02"), batch.BatchItem(0, b"c", "")]
    with MessageStore(root, cfg) as store:
        store.put_batch("B", 0, batch.encode(items), batch_properties="CLUSTER\x01c1", born_host=BORN,
                        store_host=STORE)
    assert [m.properties_string for m in records(root, cfg)] == [
        "x\x011\x02CLUSTER\x01c1", "y\x012\x02CLUSTER\x01c1", "CLUSTER\x01c1"]


def test_batch_that_does_not_fit_rolls_whole(root, cfg):
    with MessageStore(root, cfg) as store:
        assert store.put_message(msg(body=b"q" * 1900)).ok
        result = store.put_batch("B", 0, batch.encode([batch.BatchItem(0, b"w" * 450, "")] * 4), born_host=BORN,
                                 store_host=STORE)
    assert result.wrote_offset == 4096
    assert [m.physical_offset // 4096 for m in records(root, cfg)[1:]] == [1, 1, 1, 1]


@pytest.mark.parametrize(("sys_flag", "props"), [(sysflag.TRANSACTION_PREPARED, ""), (0, "DELAY\x012")])
def test_transactional_or_delayed_batch_is_refused(root, cfg, sys_flag, props):
    with MessageStore(root, cfg) as store:
        result = store.put_batch("B", 0, batch.encode(_items(2)), batch_properties=props, sys_flag=sys_flag,
                                 born_host=BORN, store_host=STORE)
        assert result.status is PutStatus.MESSAGE_ILLEGAL
        assert store.commitlog.max_offset == 0


def test_malformed_batch_body_is_refused(root, cfg):
    body = batch.encode(_items(2))[:-3]
    with MessageStore(root, cfg) as store:
        assert store.put_batch("B", 0, body, born_host=BORN, store_host=STORE).status is PutStatus.MESSAGE_ILLEGAL
        assert store.commitlog.max_offset == 0


# ---- dispatch --------------------------------------------------------------------------------

def test_index_holds_unique_key_and_every_keys_word_as_topic_hash_key(root, cfg):
    with MessageStore(root, cfg) as store:
        r = store.put_message(msg(topic="T", props="UNIQ_KEY\x01U1\x02KEYS\x01a  中文键 🚀"))
    want = [index.key_hash(f"T#{k}") for k in ("U1", "a", "中文键", "🚀")]
    assert index_entries(root, cfg) == [(h, r.wrote_offset) for h in want]


def test_full_index_file_rolls_and_the_next_starts_at_its_end(root, cfg):
    with MessageStore(root, cfg) as store:
        for i in range(10):
            store.put_message(msg(props=f"UNIQ_KEY\x01key-{i}"))
    files = sorted((root / "index").iterdir())
    headers = [index.decode_header(p.read_bytes()) for p in files]
    assert [int(h["indexCount"]) for h in headers] == [8, 4]  # 7 entries fill a file of maxIndexNum 8
    assert int(headers[1]["beginPhyOffset"]) > int(headers[0]["endPhyOffset"])
    assert files[0].name < files[1].name
    assert len(index_entries(root, cfg)) == 10


def test_dispatched_queues_equal_the_brokers_on_golden(golden_basic, golden_expected, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(_export_line(m) for m in golden_expected["messages"]))
    cfg = StoreConfig.from_file(golden_basic / "broker.conf")[0]
    load(tmp_path / "s", Source(src), LoadOptions(cfg, 0))
    for q in golden_expected["queues"]:
        got = queue(tmp_path / "s", cfg, q["topic"], q["queueId"])
        assert got["tagsCode"].tolist() == [e[3] for e in q["entries"]]
        assert got["commitLogOffset"].tolist() == [e[1] for e in q["entries"]]


def _export_line(m: dict) -> str:
    import json

    o = dict(m)
    o["bornHost"] = f"{m['bornHost']['address']}:{m['bornHost']['port']}"
    o["storeHost"] = f"{m['storeHost']['address']}:{m['storeHost']['port']}"
    return json.dumps(o) + "\n"


# ---- golden replay ---------------------------------------------------------------------------

def test_golden_replay_is_byte_identical(golden_basic, golden_expected, tmp_path):
    """expected.json replayed into a fresh store equals the broker's files byte for byte."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(_export_line(m) for m in golden_expected["messages"]))
    cfg = StoreConfig.from_file(golden_basic / "broker.conf")[0]
    out = tmp_path / "replay"
    summary = load(out, Source(src), LoadOptions(cfg, 0))
    assert summary.messages == len(golden_expected["messages"])
    gold = golden_basic / "store"
    for sub in ["commitlog", *(p.relative_to(gold) for p in (gold / "consumequeue").glob("*/*"))]:
        names = sorted(p.name for p in (gold / sub).iterdir())
        assert names == sorted(p.name for p in (out / sub).iterdir())
        for name in names:
            assert (out / sub / name).read_bytes() == (gold / sub / name).read_bytes(), f"{sub}/{name}"
    gold_index = [p.read_bytes() for p in sorted((gold / "index").iterdir())]
    assert [p.read_bytes() for p in sorted((out / "index").iterdir())] == gold_index
    assert (out / "checkpoint").read_bytes()[:24] == (gold / "checkpoint").read_bytes()[:24]
    assert (out / "lock").read_bytes() == (gold / "lock").read_bytes() == b"lock"


def test_append_to_a_copy_of_the_golden_store_continues_its_queues(golden_basic, golden_expected, tmp_path):
    import shutil

    copy = tmp_path / "g"
    shutil.copytree(golden_basic / "store", copy)
    for p in copy.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    cfg = StoreConfig.from_file(golden_basic / "broker.conf")[0]
    with MessageStore(copy, cfg) as store:
        r = store.put_message(msg(topic="OrderTopic", queue=0, props="UNIQ_KEY\x01new"))
    assert r.wrote_offset == golden_expected["maxPhyOffset"]
    assert r.queue_offset == golden_expected["maxOffsetInQueue"]["OrderTopic/0"]
    entries = queue(copy, cfg, "OrderTopic", 0)
    assert entries["commitLogOffset"].tolist()[-1] == r.wrote_offset


# ---- lifecycle -------------------------------------------------------------------------------

def test_abort_exists_while_open_and_is_removed_after_close(root, cfg):
    store = MessageStore(root, cfg)
    assert (root / "abort").exists()
    store.put_message(msg())
    store.close()
    assert not (root / "abort").exists()
    assert (root / "lock").read_bytes() == b"lock"


def test_store_left_with_abort_file_is_refused(root, cfg):
    MessageStore(root, cfg).close()
    (root / "abort").touch()
    with pytest.raises(RmqError, match="not shut down cleanly"):
        MessageStore(root, cfg)


def test_store_locked_by_another_process_is_refused(root, cfg):
    MessageStore(root, cfg).close()
    with lock_held_elsewhere(root / "lock"):
        with pytest.raises(RmqError, match=r"is locked by process \d+ \(a running broker\?\): nothing changed"):
            MessageStore(root, cfg)
        assert not (root / "abort").exists()


def test_second_open_in_one_process_is_refused(root, cfg):
    with MessageStore(root, cfg), pytest.raises(RmqError, match="already open"):
        MessageStore(root, cfg)


def test_reopen_continues_commitlog_queues_and_index(root, cfg):
    with MessageStore(root, cfg) as store:
        a = store.put_message(msg(props="UNIQ_KEY\x01a"))
    with MessageStore(root, cfg) as store:
        b = store.put_message(msg(props="UNIQ_KEY\x01b"))
    assert b.wrote_offset == a.wrote_bytes and b.queue_offset == 1
    assert [phy for _, phy in index_entries(root, cfg)] == [0, b.wrote_offset]


def test_append_interrupted_mid_record_leaves_a_store_that_reopens(root, cfg):
    store = MessageStore(root, cfg)
    first = store.put_message(msg(props="UNIQ_KEY\x01a"))
    mf = store.commitlog.queue.last
    torn = message.encode(msg(body=b"torn"))[:40]  # a put stopped after its first 40 bytes
    mf.map[mf.wrote : mf.wrote + len(torn)] = torn
    store.close()
    with MessageStore(root, cfg) as store:
        second = store.put_message(msg(props="UNIQ_KEY\x01b"))
    assert second.wrote_offset == first.wrote_bytes and second.queue_offset == 1
    assert [m.body for m in records(root, cfg)] == [b"hello", b"hello"]


def test_checkpoint_records_last_store_and_dispatch_times(root, cfg):
    from rmqtool.structures import checkpoint

    with MessageStore(root, cfg) as store:
        store.put_message(msg(tx=0))
        last = store.put_message(msg(tx=sysflag.TRANSACTION_PREPARED))
    cp = checkpoint.decode((root / "checkpoint").read_bytes())
    assert cp.physicMsgTimestamp == last.store_timestamp
    assert cp.logicsMsgTimestamp <= last.store_timestamp and cp.logicsMsgTimestamp > 0


def test_sync_flush_acknowledges_after_fdatasync(root, cfg, monkeypatch):
    synced = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real(fd)))
    with MessageStore(root, cfg, flush="sync") as store:
        store.put_message(msg())
        assert synced and store.commitlog.queue.last.flushed == store.commitlog.queue.last.wrote


def test_full_disk_at_preallocated_segment_creation_is_an_error_and_leaves_no_file(root, cfg, monkeypatch):
    def no_space(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    cfg.warmMapedFileEnable = True  # --preallocate: every block allocated when the file is made
    with MessageStore(root, cfg) as store:
        monkeypatch.setattr(os, "posix_fallocate", no_space)
        with pytest.raises(RmqError, match="disk full"):
            store.put_message(msg())
        monkeypatch.undo()
    assert list((root / "commitlog").iterdir()) == []


def test_not_empty_folder_without_store_is_refused(tmp_path, cfg):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(RmqError, match="not empty"):
        MessageStore(tmp_path, cfg)


# ---- producer-side messages ------------------------------------------------------------------

def test_client_properties_carry_tags_keys_and_a_unique_key(root, cfg):
    m = build_message("T", b"b", tags="TagA", keys="k1 k2", user={"u": "1"})
    props = properties.parse(m.properties_string)
    assert props["TAGS"] == "TagA" and props["KEYS"] == "k1 k2" and props["u"] == "1"
    assert len(props["UNIQ_KEY"]) == 32 and int(props["UNIQ_KEY"], 16) >= 0
    assert list(props) == properties.java_hashmap_order(props)


def test_negative_delay_level_and_unknown_transaction_are_refused():
    with pytest.raises(RmqError, match="negative"):
        build_message("T", b"", delay_level=-1)
    with pytest.raises(RmqError, match="unknown transaction"):
        build_message("T", b"", transaction="maybe")


def test_client_batch_of_built_messages_round_trips():
    ms = [build_message("T", f"m{i}".encode(), tags="x") for i in range(3)]
    assert [(i.body, i.properties_string) for i in batch.decode(client_batch(ms))] == \
        [(m.body, m.properties_string) for m in ms]


def present_pages(arr: np.ndarray, end: int) -> list[int]:
    """The pages of `arr[:end]` this process has mapped now (/proc/self/pagemap, bit 63)."""
    import mmap
    import struct

    first = arr.ctypes.data // mmap.PAGESIZE
    count = -(-end // mmap.PAGESIZE)
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(first * 8)
        words = struct.unpack(f"<{count}Q", f.read(count * 8))
    return [i for i, w in enumerate(words) if w >> 63]


def test_opening_and_redispatch_let_go_of_each_segments_pages_once_read(tmp_path):
    """Recovery re-dispatches from its start segment after the open found the log's end: a segment
    stays resident only while it is read (a crash recovery over 17 x 64 MiB segments held all of them,
    a 100 B store's full last 1 GiB segment stayed resident from the open's walk)."""
    from cli_helpers import CONF, fixture_copy

    root = fixture_copy(tmp_path)
    (root / "abort").touch()
    store = MessageStore(root, StoreConfig.from_file(CONF)[0], recovering=True, dispatch_from=0)
    try:
        files = store.commitlog.queue.files
        assert len(files) == 3 and store.dispatcher.dispatched == store.commitlog.max_offset
        for mf in files:
            below_writer = mf.wrote - mf.wrote % 4096  # the page appends continue in, and after it, may be warm
            assert mf.wrote > 0 and present_pages(mf.arr, below_writer) == [], mf.path
    finally:
        store.close()


def test_opening_a_store_does_not_keep_the_last_segment_it_walked_resident(tmp_path):
    """The open walks the last segment to find where appends continue; a full 1 GiB segment of a
    100 B store stayed resident through the whole command (recover --thorough peaked at 1.6 GB)."""
    from cli_helpers import CONF, fixture_copy

    store = MessageStore(fixture_copy(tmp_path), StoreConfig.from_file(CONF)[0])
    try:
        last = store.commitlog.queue.last
        assert store.dispatcher.behind == 0 and last.wrote == 151686 - 2 * 65536
        assert present_pages(last.arr, last.wrote - last.wrote % 4096) == []
    finally:
        store.close()
