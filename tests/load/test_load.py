"""The one bulk write path: as-stored placement, broker batches that roll whole, undo of a refused
load, the topic table, and an import that needs nothing beyond a plain install."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import CONF, FIXTURE, RUN_GUARD_S, run

from rmqtool.engine.config import StoreConfig
from rmqtool.errors import RmqError
from rmqtool.io.sources import Source
from rmqtool.load import writer
from rmqtool.load.records import LoadOptions
from rmqtool.structures.commitlog import message
from rmqtool.structures.config.topics import topics_path

SEGMENT = 4096
SLOTS, ENTRIES = 16, 64


@pytest.fixture
def small_conf(tmp_path: Path) -> Path:
    """4 KiB segments, tiny index files: batches roll and index files fill within a few records."""
    conf = tmp_path / "small.conf"
    conf.write_text(f"mappedFileSizeCommitLog={SEGMENT}\nmappedFileSizeConsumeQueue=400\n"
                    f"maxHashSlotNum={SLOTS}\nmaxIndexNum={ENTRIES}\n")
    return conf


def records(store: Path, conf: Path) -> list[dict]:
    out = run("decode", "commitlog", str(store), "--config", str(conf), "--jsonl", "--body", "stored")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def index_entries(store: Path) -> list[tuple[int, int, int, int]]:
    """(keyHash, phyOffset, timeDiff, prevIndex) of every used entry, file by file in name order."""
    out = []
    for p in sorted((store / "index").iterdir()):
        b = p.read_bytes()
        count = struct.unpack_from(">i", b, 36)[0]
        base = 40 + 4 * SLOTS
        out += [struct.unpack_from(">iqii", b, base + 20 * i) for i in range(1, count)]
    return out


def tree_digest(store: Path) -> dict[str, str]:
    return {str(p.relative_to(store)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(store.rglob("*")) if p.is_file() and p.name != "lock"}


def batch_lines(path: Path, topic: str, count: int, size: int, first: int = 0) -> Path:
    with open(path, "a") as f:
        for i in range(first, first + count):
            f.write(json.dumps({"topic": topic, "queueId": 0, "bodyText": f"{i:04d}" + "x" * (size - 4),
                                "keys": f"k{i}"}) + "\n")
    return path


def test_a_broker_batch_rolls_whole_although_its_first_message_fits_and_export_import_keeps_it(tmp_path,
                                                                                                 small_conf):
    store = tmp_path / "s"
    batch_lines(tmp_path / "one.jsonl", "Roll", 10, 200)  # 10 records of 344 bytes: 3440 of the 4096
    assert run("append", str(store), "--config", str(small_conf), "--batch", str(tmp_path / "one.jsonl"),
               "--batch-size", "16").returncode == 0
    batch_lines(tmp_path / "two.jsonl", "Roll", 4, 200, first=10)
    out = run("append", str(store), "--config", str(small_conf), "--batch", str(tmp_path / "two.jsonl"),
              "--batch-size", "4", "--json")
    assert out.returncode == 0, out.stderr
    msgs = records(store, small_conf)
    first_end = msgs[9]["commitLogOffset"] + msgs[9]["storeSize"]
    assert SEGMENT - first_end >= msgs[10]["storeSize"] + message.BLANK_MARKER_LEN  # its first message would fit
    assert msgs[10]["commitLogOffset"] == SEGMENT  # ... but the batch moved whole
    assert [m["queueOffset"] for m in msgs] == list(range(14))
    seg0 = (store / "commitlog" / f"{0:020d}").read_bytes()
    assert message.decode(seg0, first_end) == message.Blank(SEGMENT - first_end)
    export = tmp_path / "export.jsonl"
    assert run("export", str(store), "--config", str(small_conf), "--out", str(export)).returncode == 0
    copy = tmp_path / "copy"
    out = run("import", str(copy), str(export), "--config", str(small_conf), "--json")
    assert out.returncode == 0, out.stderr
    for sub in ("commitlog", "consumequeue"):
        for p in sorted((store / sub).rglob("*")):
            if p.is_file():
                assert (copy / p.relative_to(store)).read_bytes() == p.read_bytes(), p
    assert index_entries(copy) == index_entries(store)


@pytest.mark.parametrize(("edit", "line", "why"), [
    (lambda lines: [*lines[:3], *lines[4:]], 4, "a gap"),
    (lambda lines: [*lines[:4], lines[3], *lines[4:]], 5, "an overlap"),
    (lambda lines: [*lines[:3], lines[4], lines[3], *lines[5:]], 4, "a gap"),
])
def test_an_export_record_not_at_the_write_position_is_refused_and_nothing_is_written(tmp_path, edit, line, why):
    export = tmp_path / "export.jsonl"
    assert run("export", str(FIXTURE), "--config", str(CONF), "--out", str(export)).returncode == 0
    lines = export.read_text().splitlines()
    export.write_text("\n".join(edit(lines)) + "\n")
    out = run("import", str(tmp_path / "s"), str(export), "--config", str(CONF))
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert f"{export}:{line}: commitLogOffset: " in out.stderr and why in out.stderr
    assert not (tmp_path / "s").exists()


def test_an_export_imported_into_a_store_it_does_not_continue_is_refused_untouched(tmp_path):
    export = tmp_path / "export.jsonl"
    assert run("export", str(FIXTURE), "--config", str(CONF), "--out", str(export)).returncode == 0
    store = tmp_path / "s"
    assert run("append", str(store), "--config", str(CONF), "--topic", "T", "--body", "x").returncode == 0
    before = tree_digest(store)
    out = run("import", str(store), str(export), "--config", str(CONF))
    assert out.returncode == 2 and f"{export}:1: commitLogOffset 0: the store holds a different record there" \
        in out.stderr
    assert tree_digest(store) == before


def test_a_bad_row_in_a_later_chunk_undoes_the_load_byte_for_byte(tmp_path, small_conf, monkeypatch):
    """Chunks before the bad row were written, dispatched to queues and index (new index files and
    entries in the last old one): all of it is taken back."""
    cfg = StoreConfig.from_file(small_conf)[0]
    store = tmp_path / "s"
    rows = tmp_path / "first.jsonl"
    rows.write_text("".join(json.dumps({"topic": f"T{i % 3}", "bodyText": f"m{i}", "keys": f"a{i} b{i}"}) + "\n"
                            for i in range(40)))
    writer.load(store, Source(rows), LoadOptions(cfg, 1_700_000_000_000))
    assert len(list((store / "index").iterdir())) == 2  # the last index file is half full
    before = tree_digest(store)
    more = tmp_path / "more.jsonl"
    good = [json.dumps({"topic": f"U{i % 5}", "bodyText": "y" * 50, "keys": f"c{i}"}) for i in range(300)]
    more.write_text("\n".join([*good, json.dumps({"topic": "U0", "body": "%%%"})]) + "\n")
    monkeypatch.setattr(writer, "CHUNK_ROWS", 64)
    with pytest.raises(RmqError, match=rf"{more}:301: body: not valid base64"):
        writer.load(store, Source(more), LoadOptions(cfg, 1_700_000_000_000))
    assert tree_digest(store) == before
    writer.load(store, Source(rows), LoadOptions(cfg, 1_700_000_000_000))  # and the store takes writes again
    assert len(records(store, small_conf)) == 80


def test_a_refused_load_into_a_new_store_leaves_no_store(tmp_path, monkeypatch):
    cfg = StoreConfig.from_file(CONF)[0]
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"topic": "T", "bodyText": "x"}) + "\n" for _ in range(100))
                    + json.dumps({"topic": "a/b"}) + "\n")
    monkeypatch.setattr(writer, "CHUNK_ROWS", 10)
    with pytest.raises(RmqError, match=r"rows.jsonl:101: topic: 'a/b' cannot name a consume-queue folder"):
        writer.load(tmp_path / "s", Source(rows), LoadOptions(cfg, 5))
    assert not (tmp_path / "s").exists()


def test_import_registers_every_topic_with_enough_queues_and_keeps_what_was_there(tmp_path):
    store = tmp_path / "s"
    table = topics_path(store)
    table.parent.mkdir(parents=True)
    old = {"dataVersion": {"counter": 7, "timestamp": 1}, "topicConfigTable": {
        "OrderTopic": {"order": True, "perm": 4, "readQueueNums": 2, "topicFilterType": "MULTI_TAG",
                       "topicName": "OrderTopic", "topicSysFlag": 0, "writeQueueNums": 2},
        "Other": {"order": False, "perm": 6, "readQueueNums": 16, "topicFilterType": "SINGLE_TAG",
                  "topicName": "Other", "topicSysFlag": 0, "writeQueueNums": 16}}}
    table.write_text(json.dumps(old))
    export = tmp_path / "export.jsonl"
    assert run("export", str(FIXTURE), "--config", str(CONF), "--out", str(export)).returncode == 0
    assert run("import", str(store), str(export), "--config", str(CONF)).returncode == 0
    doc = json.loads(table.read_text())
    highest: dict[str, int] = {}
    for m in map(json.loads, export.read_text().splitlines()):
        if m["topic"] != "SCHEDULE_TOPIC_XXXX":
            highest[m["topic"]] = max(highest.get(m["topic"], 0), m["queueId"] + 1)
    got = doc["topicConfigTable"]
    assert set(got) == set(highest) | {"Other"}
    for name, need in highest.items():
        assert got[name]["readQueueNums"] == got[name]["writeQueueNums"] == max(need, 2 if name == "OrderTopic"
                                                                                 else 0)
        assert got[name]["topicName"] == name
    assert got["OrderTopic"]["perm"] == 4 and got["OrderTopic"]["order"] is True  # kept as it was
    assert got["Other"] == old["topicConfigTable"]["Other"]
    assert doc["dataVersion"]["counter"] == 8
    assert json.loads(table.with_name("topics.json.bak").read_text()) == old


def test_no_register_topics_leaves_the_topic_table_alone(tmp_path):
    store = tmp_path / "s"
    out = run("append", str(store), "--config", str(CONF), "--batch", "-", "--no-register-topics",
              stdin='{"topic": "A", "bodyText": "x"}\n')
    assert out.returncode == 0, out.stderr
    assert not topics_path(store).exists()
    out = run("append", str(store), "--config", str(CONF), "--topic", "B", "--queue", "5", "--body", "y")
    assert out.returncode == 0, out.stderr
    assert json.loads(topics_path(store).read_text())["topicConfigTable"]["B"]["writeQueueNums"] == 6


def test_delayed_lines_of_a_batch_file_register_their_real_topic(tmp_path):
    store = tmp_path / "s"
    out = run("append", str(store), "--config", str(CONF), "--batch", "-",
              stdin='{"topic": "Later", "queueId": 2, "bodyText": "x", "delayLevel": 3}\n')
    assert out.returncode == 0, out.stderr
    table = json.loads(topics_path(store).read_text())["topicConfigTable"]
    assert set(table) == {"Later"} and table["Later"]["readQueueNums"] == 3


_NO_EXTRAS = """
import sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "rocksdict", "pandas", "hypothesis"):
            raise ImportError(f"{name} is an optional extra")
sys.meta_path.insert(0, Blocked())
from rmqtool.cli.app import main
sys.argv = ["rmqtool", "import", sys.argv[1], sys.argv[2], "--config", sys.argv[3]]
main()
"""


def test_import_of_an_export_needs_no_optional_extra(tmp_path):
    export = tmp_path / "export.parquet"
    assert run("export", str(FIXTURE), "--config", str(CONF), "--out", str(export)).returncode == 0
    out = subprocess.run([sys.executable, "-c", _NO_EXTRAS, str(tmp_path / "s"), str(export), str(CONF)],
                         capture_output=True, text=True, timeout=RUN_GUARD_S)
    assert out.returncode == 0, out.stderr
    segment = Path("commitlog") / f"{0:020d}"
    assert (tmp_path / "s" / segment).read_bytes() == (FIXTURE / segment).read_bytes()


def test_body_given_as_base64_or_bytes_or_text_is_the_same_record(tmp_path):
    rows = [{"topic": "T", "body": base64.b64encode(b"hello").decode()}, {"topic": "T", "bodyText": "hello"}]
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert run("import", str(tmp_path / "s"), str(src), "--config", str(CONF), "--store-timestamp", "5").returncode == 0
    a, b = records(tmp_path / "s", CONF)
    assert a["body"] == b["body"] == base64.b64encode(b"hello").decode() and a["bodyCRC"] == b["bodyCRC"]


def test_load_keys_are_laid_out_as_a_producers_unique_id():
    import numpy as np

    from rmqtool.structures.commitlog.uniqkernel import put_load_keys

    buf = np.zeros(100, dtype=np.uint8)
    put_load_keys(buf, np.array([3, 50]), np.array([[10, 1, 2, 3], [127, 0, 0, 1]], dtype=np.uint8),
                  (0x01020304, 0x7FFFFFFF), np.array([5, 65536 + 7]))
    assert bytes(buf[3:35]) == b"0A010203" b"0000" b"01020304" b"7FFFFFFF" b"0005"
    assert bytes(buf[50:82]) == b"7F000001" b"0000" b"01020304" b"00000000" b"0007"  # time wraps in 31 bits


@pytest.mark.parametrize("tags", [None, "TagA", "标签"])
@pytest.mark.parametrize("keys", [None, "k1", "order-7 user-9"])
def test_generated_properties_equal_the_producers_builder(tags, keys):
    """The compiled builder and the per-message builder (append) write the same properties."""
    import numpy as np
    import pyarrow as pa

    from rmqtool.engine.producer import client_properties
    from rmqtool.io.buffers import string_buffers
    from rmqtool.structures.commitlog.propskernel import build_properties

    def column(value):
        arr = pa.array([value], pa.string())
        return (*string_buffers(arr), np.array([value is not None]))

    buf, off, uniq_at = build_properties(column(tags), column(keys), np.zeros(1, dtype=bool),
                                         string_buffers(pa.array([], pa.large_string())), 32)
    want = client_properties(tags=tags, keys=keys, uniq="0" * 32).encode()
    assert bytes(buf[off[0]:off[1]]) == want
    assert want[uniq_at[0] - len(b"UNIQ_KEY\x01"):uniq_at[0]] == b"UNIQ_KEY\x01"


def test_import_reads_csv_rows_as_it_reads_their_jsonl(tmp_path):
    rows = [{"topic": "A", "bodyText": "one, two", "tags": "t", "keys": "k1 k2", "queueId": 1},
            {"topic": "B", "bodyText": "say \"hi\"", "properties": '{"p": "v"}'}]
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("".join(json.dumps({**r, "properties": json.loads(r["properties"])} if "properties" in r else r)
                             + "\n" for r in rows))
    csv = tmp_path / "rows.csv"
    csv.write_text('topic,bodyText,tags,keys,queueId,properties\n'
                   'A,"one, two",t,k1 k2,1,\n'
                   'B,"say ""hi""",,,,"{""p"": ""v""}"\n')
    for src, name in ((jsonl, "j"), (csv, "c")):
        out = run("import", str(tmp_path / name), str(src), "--config", str(CONF), "--store-timestamp", "7")
        assert out.returncode == 0, out.stderr
    segment = Path("commitlog") / f"{0:020d}"
    assert (tmp_path / "c" / segment).read_bytes() == (tmp_path / "j" / segment).read_bytes()
    assert [m["properties"].get("p") for m in records(tmp_path / "c", CONF)] == [None, "v"]


def test_a_topic_table_that_is_not_json_is_refused_before_anything_is_written(tmp_path):
    store = tmp_path / "s"
    assert run("append", str(store), "--config", str(CONF), "--topic", "A", "--body", "x").returncode == 0
    topics_path(store).write_text("{not json")
    before = tree_digest(store)
    out = run("append", str(store), "--config", str(CONF), "--topic", "A", "--body", "y")
    assert out.returncode == 2 and "topics.json: not JSON" in out.stderr and "--no-register-topics" in out.stderr
    assert tree_digest(store) == before
    out = run("append", str(store), "--config", str(CONF), "--topic", "A", "--body", "y", "--no-register-topics")
    assert out.returncode == 0, out.stderr
