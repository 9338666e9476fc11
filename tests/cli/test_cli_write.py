"""append, append --batch, import, export and bench append as a user runs them."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cli_helpers import run
from lockholder import lock_held_elsewhere

from rmqtool.structures import index
from rmqtool.structures.commitlog import msgid
from rmqtool.structures.commitlog.delay import SCHEDULE_TOPIC
from rmqtool.structures.commitlog.hosts import parse_host

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "store"
CONF = str(ROOT / "fixtures" / "broker.conf")


def decoded(store: Path, body: str = "stored") -> list[dict]:
    """Every record as decode prints it; bodies as stored, as export writes them."""
    out = run("decode", "commitlog", str(store), "--config", CONF, "--jsonl", "--body", body)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_append_one_message_prints_its_msgid_and_offsets(tmp_path):
    store = tmp_path / "s"
    out = run("append", str(store), "--config", CONF, "--topic", "OrderTopic", "--queue", "2", "--tags", "TagA",
              "--keys", "order-1 user-7", "--property", "city=München", "--body", "hello",
              "--store-host", "10.1.2.3:10911", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["status"] == "PUT_OK" and doc["wroteOffset"] == 0 and doc["queueOffset"] == 0
    assert doc["msgId"] == msgid.create(parse_host("10.1.2.3:10911"), 0)
    (m,) = decoded(store)
    assert (m["topic"], m["queueId"], base64.b64decode(m["body"])) == ("OrderTopic", 2, b"hello")
    assert m["properties"]["TAGS"] == "TagA" and m["properties"]["KEYS"] == "order-1 user-7"
    assert m["properties"]["city"] == "München" and len(m["properties"]["UNIQ_KEY"]) == 32
    assert m["storeSize"] == doc["wroteBytes"] and m["storeTimestamp"] == doc["storeTimestamp"]
    assert not (store / "abort").exists()


def test_append_delayed_message_lands_on_schedule_topic(tmp_path):
    store = tmp_path / "s"
    out = run("append", str(store), "--config", CONF, "--topic", "T", "--delay-level", "3", "--body", "x", "--json")
    assert out.returncode == 0, out.stderr
    (m,) = decoded(store)
    assert (m["topic"], m["queueId"]) == (SCHEDULE_TOPIC, 2)
    assert (m["properties"]["REAL_TOPIC"], m["properties"]["REAL_QID"], m["properties"]["DELAY"]) == ("T", "0", "3")
    assert m["tagsCode"] == m["storeTimestamp"] + 10_000


@pytest.mark.parametrize("args", [
    ["--topic", "x" * 128, "--body", "b"],
    ["--topic", "T", "--transaction", "maybe"],
    ["--topic", "T", "--delay-level", "-1"],
    ["--topic", "T", "--property", "novalue"],
    ["--topic", "T", "--born-host", "nowhere"],
])
def test_bad_append_input_is_one_line_exit_2_and_creates_nothing(tmp_path, args):
    store = tmp_path / "s"
    out = run("append", str(store), "--config", CONF, *args)
    assert out.returncode == 2
    assert out.stderr.startswith("rmqtool: error:") and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert not store.exists()


def test_append_batch_file_groups_broker_batches_and_keeps_queue_order(tmp_path):
    lines = [{"topic": "A", "queueId": 0, "bodyText": f"a{i}", "tags": "t", "keys": [f"k{i}"]} for i in range(5)]
    lines.insert(2, {"topic": "B", "queueId": 1, "body": base64.b64encode(b"\x00\x01").decode(), "flag": 7,
                     "properties": {"p": "v"}, "bornHost": "[::1]:99", "bornTimestamp": 123})
    lines.append({"topic": "A", "bodyText": "later", "delayLevel": 1})
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n\n")
    store = tmp_path / "s"
    out = run("append", str(store), "--config", CONF, "--batch", str(src), "--batch-size", "3", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["messages"] == 7 and doc["puts"] == 4  # A: 3 + 2, B: 1, delayed: 1
    msgs = decoded(store)
    a = [m for m in msgs if m["topic"] == "A"]
    assert [base64.b64decode(m["body"]).decode() for m in a] == [f"a{i}" for i in range(5)]
    assert [m["queueOffset"] for m in a] == [0, 1, 2, 3, 4]
    assert a[0]["storeTimestamp"] == a[2]["storeTimestamp"]  # one broker batch
    (b,) = [m for m in msgs if m["topic"] == "B"]
    assert (b["flag"], b["bornHost"], b["bornTimestamp"], b["properties"]["p"]) == (7, "[::1]:99", 123, "v")
    (late,) = [m for m in msgs if m["topic"] == SCHEDULE_TOPIC]
    assert late["properties"]["REAL_TOPIC"] == "A"


def test_append_batch_from_stdin(tmp_path):
    store = tmp_path / "s"
    out = run("append", str(store), "--config", CONF, "--batch", "-", stdin='{"topic":"S","bodyText":"in"}\n')
    assert out.returncode == 0, out.stderr
    assert [m["topic"] for m in decoded(store)] == ["S"]


@pytest.mark.parametrize(("line", "reason"), [
    ("{not json", "malformed JSON"),
    ('{"topic": "A", "queueId": "z"}', "queueId: must be an integer"),
    ('{"bodyText": "no topic"}', "topic: missing"),
    ('{"topic": "A", "body": "***"}', "body: not valid base64"),
    ('{"topic": "A", "delayLevel": -2}', "delayLevel: out of range"),
])
def test_malformed_batch_line_reports_its_number_and_writes_nothing(tmp_path, line, reason):
    src = tmp_path / "in.jsonl"
    src.write_text('{"topic": "A", "bodyText": "ok"}\n' + line + "\n")
    store = tmp_path / "s"
    out = run("append", str(store), "--config", CONF, "--batch", str(src))
    assert out.returncode == 2
    assert f"{src}:2:" in out.stderr and reason in out.stderr
    assert not store.exists()


def test_export_then_import_reproduces_the_fixture_store_byte_for_byte(tmp_path):
    export = tmp_path / "export.jsonl"
    out = run("export", str(FIXTURE), "--config", CONF, "--out", str(export))
    assert out.returncode == 0, out.stderr
    assert len(export.read_text().splitlines()) == 420
    copy = tmp_path / "copy"
    out = run("import", str(copy), str(export), "--config", CONF, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["messages"] == 420
    for sub in ["commitlog", *(p.relative_to(FIXTURE) for p in (FIXTURE / "consumequeue").glob("*/*"))]:
        for p in sorted((FIXTURE / sub).iterdir()):
            assert (copy / sub / p.name).read_bytes() == p.read_bytes(), f"{sub}/{p.name}"
    for a, b in zip(sorted((FIXTURE / "index").iterdir()), sorted((copy / "index").iterdir()), strict=True):
        slots = 16
        ea, eb = (index.decode_entries(x.read_bytes(), slots, int(index.decode_header(x.read_bytes())["indexCount"]))
                  for x in (a, b))
        assert ea.tolist() == eb.tolist()


def test_export_to_stdout_is_the_decode_schema(tmp_path):
    out = run("export", str(FIXTURE), "--config", CONF)
    assert out.returncode == 0, out.stderr
    first = json.loads(out.stdout.splitlines()[0])
    assert first == decoded(FIXTURE)[0]


def test_export_parquet_has_the_same_rows_as_jsonl(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="the spark extra (pyarrow) is not installed")
    path = tmp_path / "x.parquet"
    out = run("export", str(FIXTURE), "--config", CONF, "--format", "parquet", "--out", str(path))
    assert out.returncode == 0, out.stderr
    rows = pq.read_table(path).to_pylist()
    want = decoded(FIXTURE)
    assert len(rows) == len(want) == 420
    for row, w in zip(rows[:50], want[:50], strict=True):
        row["properties"] = dict(row["properties"])
        row["body"] = base64.b64encode(row["body"]).decode()
        assert row == w


def test_import_with_a_bad_line_names_it_and_creates_nothing(tmp_path):
    src = tmp_path / "in.jsonl"
    good = json.dumps({"topic": "A", "body": "", "storeTimestamp": 5})
    src.write_text(good + "\n" + json.dumps({"topic": "B" * 200}) + "\n")
    out = run("import", str(tmp_path / "s"), str(src))
    assert out.returncode == 2 and f"{src}:2: topic: 200 bytes" in out.stderr
    assert not (tmp_path / "s").exists()


def test_import_keeps_store_timestamp_hosts_and_properties_string(tmp_path):
    rec = {"topic": SCHEDULE_TOPIC, "queueId": 1, "body": base64.b64encode(b"z").decode(), "sysFlag": 0, "flag": 3,
           "bornTimestamp": 11, "storeTimestamp": 22, "bornHost": "1.2.3.4:5", "storeHost": "[fe80::1]:6",
           "reconsumeTimes": 2, "preparedTransactionOffset": 0, "propertiesString": "DELAY\x012\x02REAL_TOPIC\x01T\x02",
           "properties": {"ignored": "x"}}
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(rec) + "\n")
    store = tmp_path / "s"
    assert run("import", str(store), str(src), "--config", CONF).returncode == 0
    (m,) = decoded(store)
    assert (m["topic"], m["queueId"], m["storeTimestamp"], m["bornHost"], m["storeHost"]) == \
        (SCHEDULE_TOPIC, 1, 22, "1.2.3.4:5", "[fe80::1]:6")
    assert (m["flag"], m["reconsumeTimes"], m["propertiesString"]) == (3, 2, rec["propertiesString"])
    assert m["sysFlag"] == 0x20  # the store-host IPv6 bit follows the address


def test_append_to_a_store_locked_by_another_process_exits_2(tmp_path):
    store = tmp_path / "s"
    assert run("append", str(store), "--config", CONF, "--topic", "T", "--body", "").returncode == 0
    with lock_held_elsewhere(store / "lock"):
        out = run("append", str(store), "--config", CONF, "--topic", "T", "--body", "")
        assert out.returncode == 2 and "is locked by process " in out.stderr
    assert len(decoded(store)) == 1


def test_golden_import_through_the_cli_is_byte_identical(golden_basic, golden_expected, tmp_path):
    src = tmp_path / "in.jsonl"
    with src.open("w") as f:
        for m in golden_expected["messages"]:
            o = {k: m[k] for k in m if k not in ("bornHost", "storeHost")}
            o["bornHost"] = f"{m['bornHost']['address']}:{m['bornHost']['port']}"
            o["storeHost"] = f"{m['storeHost']['address']}:{m['storeHost']['port']}"
            f.write(json.dumps(o, ensure_ascii=False) + "\n")
    out = run("import", str(tmp_path / "s"), str(src), "--config", str(golden_basic / "broker.conf"))
    assert out.returncode == 0, out.stderr
    gold = golden_basic / "store" / "commitlog"
    for p in gold.iterdir():
        assert (tmp_path / "s" / "commitlog" / p.name).read_bytes() == p.read_bytes()


def test_bench_append_reports_the_bench_schema():
    out = run("bench", "append", "--messages", "3000", "--batch-size", "32", "--body-size", "64", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["mode"] == "append-batch-32-async" and doc["messages"] == 3000
    assert doc["bytes"] > 3000 * 64 and doc["seconds"] > 0 and doc["peakRssBytes"] > 0
    assert doc["messagesPerSecond"] == pytest.approx(3000 / doc["seconds"], rel=2e-2)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_import_of_an_export_in_either_format_equals_the_per_record_writes(tmp_path, fmt):
    """The fixture store was written message by message; its export, imported in bulk, is the same bytes."""
    src = tmp_path / f"export.{fmt}"
    assert run("export", str(FIXTURE), "--config", CONF, "--format", fmt, "--out", str(src)).returncode == 0
    bulk = tmp_path / "bulk"
    assert run("import", str(bulk), str(src), "--config", CONF).returncode == 0
    for p in sorted(FIXTURE.rglob("*")):
        if p.is_file() and p.parent.name != "index" and p.name not in ("checkpoint", "lock"):
            assert (bulk / p.relative_to(FIXTURE)).read_bytes() == p.read_bytes(), p.relative_to(FIXTURE)


def test_a_bad_body_in_an_export_names_its_line_and_creates_nothing(tmp_path):
    src = tmp_path / "export.jsonl"
    assert run("export", str(FIXTURE), "--config", CONF, "--out", str(src)).returncode == 0
    lines = src.read_text().splitlines()
    bad = json.loads(lines[10])
    bad["body"] = "not base64!"
    lines[10] = json.dumps(bad)
    src.write_text("\n".join(lines) + "\n")
    out = run("import", str(tmp_path / "s"), str(src), "--config", CONF)
    assert out.returncode == 2 and f"{src}:11: body: not valid base64" in out.stderr
    assert not (tmp_path / "s").exists()
