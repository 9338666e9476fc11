"""The store in ../shared/golden/basic was written by the real Java 4.9.7 broker; expected.json
is the broker's own reading of it. rmqtool must agree on every field, entry and header."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
from pathlib import Path

import pytest
from cli_helpers import run

from rmqtool.engine.reader import open_reader
from rmqtool.ops.views import decode_log, index_report, queue_entries

FIELDS = ["msgId", "commitLogOffset", "storeSize", "topic", "queueId", "queueOffset", "sysFlag", "flag",
          "bornTimestamp", "storeTimestamp", "reconsumeTimes", "preparedTransactionOffset", "bodyCRC", "body",
          "propertiesString", "properties", "tagsCode"]


def _host(text: str) -> tuple[str, int]:
    addr, _, port = text.rpartition(":")
    return ipaddress.ip_address(addr.strip("[]")).compressed, int(port)


def _tree_fingerprint(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def golden_reader(golden_basic):
    return open_reader(golden_basic / "store", golden_basic / "broker.conf")


def _assert_message(exp: dict, got: dict) -> None:
    for name in FIELDS:
        if name == "tagsCode" and not exp.get("inConsumeQueue", True):
            assert got[name] is None
            continue
        assert got[name] == exp[name], (exp["commitLogOffset"], name)
    for host in ("bornHost", "storeHost"):
        assert _host(got[host]) == (ipaddress.ip_address(exp[host]["address"]).compressed, exp[host]["port"])


def test_every_golden_message_matches_the_broker(golden_reader, golden_expected):
    got = [m.to_json() for m in decode_log(golden_reader)]
    assert all("error" not in m for m in got)
    assert len(got) == golden_expected["messageCount"] == 1500
    for exp, msg in zip(golden_expected["messages"], got, strict=True):
        _assert_message(exp, msg)
    assert base64.b64decode(got[0]["body"]) == base64.b64decode(golden_expected["messages"][0]["body"])


def test_segments_end_where_the_broker_put_blank_markers(golden_reader, golden_expected):
    from rmqtool.structures.commitlog.message import Blank

    for blank in golden_expected["blanks"]:
        rec = golden_reader.read_record(blank["offset"])
        assert rec == Blank(blank["declaredSize"])
    assert golden_expected["maxPhyOffset"] == max(
        m["commitLogOffset"] + m["storeSize"] for m in golden_expected["messages"])


def test_every_consume_queue_entry_matches(golden_reader, golden_expected):
    for q in golden_expected["queues"]:
        rows = [[e["queueOffset"], e["commitLogOffset"], e["size"], e["tagsCode"]]
                for e in queue_entries(golden_reader, q["topic"], q["queueId"])]
        assert rows == q["entries"], f"{q['topic']}/{q['queueId']}"
        assert rows[-1][0] + 1 == q["maxOffset"]


def test_every_index_header_matches(golden_reader, golden_expected):
    reports = {p.name: index_report(golden_reader, p) for p in golden_reader.index_paths()}
    assert sorted(reports) == sorted(f["name"] for f in golden_expected["indexFiles"])
    for exp in golden_expected["indexFiles"]:
        header = reports[exp["name"]]["header"]
        assert header == {k: exp[k] for k in header}
    assert sum(len(r["entries"]) for r in reports.values()) == golden_expected["indexEntriesInFiles"]


def test_index_entries_point_at_records_carrying_the_key(golden_reader, golden_expected):
    from rmqtool.structures import index
    from rmqtool.structures.commitlog import properties

    by_offset = {m["commitLogOffset"]: m for m in golden_expected["messages"]}
    for path in golden_reader.index_paths():
        for e in index_report(golden_reader, path)["entries"]:
            m = by_offset[e["phyOffset"]]
            props = properties.parse_java(m["propertiesString"])
            keys = [props.get("UNIQ_KEY"), *properties.keys_of(props)]
            assert e["keyHash"] in {index.key_hash(index.index_key(m["topic"], k)) for k in keys if k}


def test_checkpoint_matches(golden_reader, golden_expected):
    cp = golden_reader.checkpoint().to_json()
    assert cp == {k: golden_expected["checkpoint"][k] for k in
                  ("physicMsgTimestamp", "logicsMsgTimestamp", "indexMsgTimestamp")}


def test_cli_decodes_the_golden_store_and_changes_nothing(golden_basic, golden_expected):
    store, conf = str(golden_basic / "store"), str(golden_basic / "broker.conf")
    before = _tree_fingerprint(golden_basic)
    out = run("decode", "commitlog", store, "--config", conf, "--jsonl", "--body", "base64")
    assert out.returncode == 0, out.stderr
    got = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(got) == 1500
    for exp, msg in zip(golden_expected["messages"], got, strict=True):
        _assert_message(exp, msg)
    q = golden_expected["queues"][0]
    out = run("decode", "consumequeue", store, "--topic", q["topic"], "--queue", str(q["queueId"]),
               "--config", conf, "--jsonl")
    assert [[e["queueOffset"], e["commitLogOffset"], e["size"], e["tagsCode"]]
            for e in map(json.loads, out.stdout.splitlines())] == q["entries"]
    out = run("decode", "index", store, "--config", conf, "--json", "--no-entries")
    headers = {f["name"]: f["header"] for f in json.loads(out.stdout)["files"]}
    for exp in golden_expected["indexFiles"]:
        assert headers[exp["name"]]["indexCount"] == exp["indexCount"]
        assert headers[exp["name"]]["endPhyOffset"] == exp["endPhyOffset"]
    out = run("decode", "checkpoint", store, "--json")
    assert json.loads(out.stdout)["indexMsgTimestamp"] == golden_expected["checkpoint"]["indexMsgTimestamp"]
    assert _tree_fingerprint(golden_basic) == before
    assert not (golden_basic / "store" / "abort").exists()
