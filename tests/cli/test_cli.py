"""The command line on the fixture store: exact output, help examples, exit codes, no writes."""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import pytest
from cli_helpers import RMQTOOL, RUN_GUARD_S, fixture_copy, run
from damage import corrupt
from fixtures_messages import expected_messages

from rmqtool.structures.commitlog import crc, msgid
from rmqtool.structures.javahash import java_string_hash

ROOT = Path(__file__).resolve().parents[2]
STORE = str(ROOT / "fixtures" / "store")
CONF = str(ROOT / "fixtures" / "broker.conf")


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def _first_record() -> tuple[int, bytes]:
    raw = (ROOT / "fixtures" / "store" / "commitlog" / "00000000000000000000").read_bytes()
    return struct.unpack_from(">i", raw, 0)[0], raw


def test_decode_commitlog_jsonl_text_bodies_and_topic_filter():
    want = [m for m in expected_messages() if m.topic == "PaymentTopic"][:5]
    out = run("decode", "commitlog", STORE, "--config", CONF, "--topic", "PaymentTopic", "--count", "5",
              "--jsonl", "--body", "text")
    assert out.returncode == 0, out.stderr
    got = jsonl(out.stdout)
    assert [g["body"] for g in got] == [m.body.decode("utf-8", "replace") for m in want]
    assert [g["propertiesString"] for g in got] == [m.properties_string for m in want]
    assert {g["topic"] for g in got} == {"PaymentTopic"}
    for g in got:
        tags = g["properties"].get("TAGS")
        dispatched = g["sysFlag"] & 0xC in (0x0, 0x8)  # not prepared, not rolled back
        assert g["tagsCode"] == ((java_string_hash(tags) if tags else 0) if dispatched else None)
    for g, m in zip(got, want, strict=True):
        assert g["bodyCRC"] == crc.body_crc(m.body)
        assert msgid.decode(g["msgId"])[1] == g["commitLogOffset"]


def test_decode_commitlog_from_offset_hex_and_none_bodies():
    size, raw = _first_record()
    out = run("decode", "commitlog", STORE, "--phy-offset", str(size), "--count", "1", "--json", "--body", "hex")
    doc = json.loads(out.stdout)["messages"]
    assert len(doc) == 1 and doc[0]["commitLogOffset"] == size
    body_len = struct.unpack_from(">i", raw, size + 84)[0]
    assert doc[0]["body"] == raw[size + 88 : size + 88 + body_len].hex()
    out = run("decode", "commitlog", STORE, "--count", "2", "--jsonl", "--body", "none")
    assert [m["body"] for m in jsonl(out.stdout)] == [None, None]


def test_decode_count_stops_before_a_crc_error_past_its_last_message(tmp_path):
    store = fixture_copy(tmp_path)
    segment = store / "commitlog" / f"{0:020d}"
    corrupt(store, segment.relative_to(store), "flip", 15310 + 93)  # a body byte of the 26th record
    out = run("decode", "commitlog", str(segment), "--count", "3", "--jsonl", "--body", "none")
    assert out.returncode == 0, out.stderr
    assert [m["commitLogOffset"] for m in jsonl(out.stdout)] == [0, 239, 415] and "error" not in out.stdout
    past = jsonl(run("decode", "commitlog", str(segment), "--count", "25", "--jsonl", "--body", "none").stdout)
    assert [m.get("commitLogOffset", m.get("offset")) for m in past[-3:]] == [15018, 15310, 15618]
    assert past[-2]["error"].startswith("body CRC mismatch: stored ")


def test_query_at_the_logs_end_names_the_last_record_not_a_bad_magic_code():
    end = run("query", STORE, "--phy-offset", "151686")
    assert end.returncode == 3 and end.stdout == ""
    assert end.stderr == ("rmqtool: not found: offset 151686 is the end of the log: no message is written there yet "
                          "(the last one starts at 151493, 193 bytes)\n")
    past = run("query", STORE, "--phy-offset", "151687")
    assert past.returncode == 3
    assert past.stderr == "rmqtool: not found: no message starts at offset 151687 (bad magic code 0x00000000)\n"


def test_decoded_record_states_of_the_fixture():
    got = jsonl(run("decode", "commitlog", STORE, "--config", CONF, "--jsonl").stdout)
    assert len(got) == 420
    prepared = [m for m in got if m["sysFlag"] & 0xC == 0x4]
    assert prepared and all(m["tagsCode"] is None and m["queueOffset"] == 0 for m in prepared)
    delayed = [m for m in got if m["topic"] == "SCHEDULE_TOPIC_XXXX"]
    levels = [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]
    for m in delayed:
        level = int(m["properties"]["DELAY"])
        assert m["queueId"] == level - 1 and m["tagsCode"] == m["storeTimestamp"] + 1000 * levels[level - 1]
    v6 = [m for m in got if m["storeHost"].startswith("[")]
    assert v6 and all(m["sysFlag"] & 0x20 and len(m["msgId"]) == 56 for m in v6)


def test_table_output_lists_messages():
    out = run("decode", "commitlog", STORE, "--count", "3", "--body", "text")
    assert out.returncode == 0
    assert "message 0" in out.stdout and "OrderTopic" in out.stdout and "3 messages" in out.stderr
    one = run("decode", "commitlog", STORE, "--count", "1", "--body", "none")
    assert one.stderr.strip().splitlines()[-1] == "1 message"


def test_decode_consumequeue_by_queue_and_by_file():
    msgs = [m for m in jsonl(run("decode", "commitlog", STORE, "--jsonl").stdout)
            if m["topic"] == "OrderTopic" and m["queueId"] == 1 and m["tagsCode"] is not None]
    want = [{"queueOffset": m["queueOffset"], "commitLogOffset": m["commitLogOffset"], "size": m["storeSize"],
             "tagsCode": m["tagsCode"]} for m in msgs]
    by_queue = jsonl(run("decode", "consumequeue", STORE, "--topic", "OrderTopic", "--queue", "1", "--jsonl").stdout)
    assert by_queue == want
    cq_file = ROOT / "fixtures" / "store" / "consumequeue" / "OrderTopic" / "1" / "00000000000000000000"
    assert jsonl(run("decode", "consumequeue", str(cq_file), "--jsonl").stdout) == want[:200]


def test_decode_index_json_and_jsonl():
    doc = json.loads(run("decode", "index", STORE, "--config", CONF, "--json").stdout)
    first = doc["files"][0]
    raw = (ROOT / "fixtures" / "store" / "index" / first["name"]).read_bytes()
    assert first["header"]["indexCount"] == struct.unpack_from(">i", raw, 36)[0]
    assert first["slots"]["hashSlotNum"] == 64 and len(first["entries"]) == first["header"]["indexCount"] - 1
    e = first["entries"][0]
    assert (e["keyHash"], e["phyOffset"]) == struct.unpack_from(">iq", raw, 40 + 64 * 4 + 20)
    lines = jsonl(run("decode", "index", STORE, "--jsonl").stdout)
    assert lines[0]["header"] == first["header"] and lines[1]["entry"] == 1


def test_decode_checkpoint_and_msgid():
    raw = (ROOT / "fixtures" / "store" / "checkpoint").read_bytes()
    doc = json.loads(run("decode", "checkpoint", STORE, "--json").stdout)
    assert [doc[k] for k in ("physicMsgTimestamp", "logicsMsgTimestamp", "indexMsgTimestamp")] == list(
        struct.unpack_from(">qqq", raw, 0))
    doc = json.loads(run("decode", "msgid", "C633640700002A9F0000000000000206", "--json").stdout)
    assert doc == {"msgId": "C633640700002A9F0000000000000206", "kind": "offset", "address": "198.51.100.7",
                   "port": 10911, "storeHost": "198.51.100.7:10911", "commitLogOffset": 518}


def test_inspect_shows_fields_with_byte_ranges_and_raw_hex():
    size, raw = _first_record()
    doc = json.loads(run("inspect", STORE, "--phy-offset", "0", "--json").stdout)
    names = [f["name"] for f in doc["fields"]]
    assert names == ["totalSize", "magicCode", "bodyCRC", "queueId", "flag", "queueOffset", "physicalOffset",
                     "sysFlag", "bornTimestamp", "bornHost", "storeTimestamp", "storeHost", "reconsumeTimes",
                     "preparedTransactionOffset", "bodyLength", "body", "topicLength", "topic",
                     "propertiesLength", "properties"]
    for f in doc["fields"]:
        assert bytes.fromhex(f["hex"]) == raw[f["start"] : f["end"]]
    assert doc["fields"][-1]["end"] == size and doc["problem"] is None
    table = run("inspect", STORE, "--phy-offset", "0")
    assert table.returncode == 0 and "bornHost" in table.stdout


def test_inspect_corrupt_record_names_the_problem(store_copy):
    seg = store_copy / "commitlog" / "00000000000000000000"
    raw = bytearray(seg.read_bytes())
    raw[115] ^= 0xFF  # inside the first record's body (IPv6 hosts: the body starts at byte 112)
    seg.write_bytes(bytes(raw))
    out = run("inspect", str(store_copy), "--phy-offset", "0", "--json")
    assert out.returncode == 1
    doc = json.loads(out.stdout)
    assert doc["problem"].startswith("body CRC mismatch: stored")
    crc_field = next(f for f in doc["fields"] if f["name"] == "bodyCRC")
    assert crc_field["note"].startswith("MISMATCH")


@pytest.mark.parametrize("cmd", [["decode", "commitlog"], ["decode", "consumequeue"], ["decode", "index"],
                                 ["decode", "checkpoint"], ["decode", "msgid"], ["inspect"], ["bench", "scan"]])
def test_every_command_help_shows_an_example(cmd):
    out = run(*cmd, "--help")
    assert out.returncode == 0 and "Example:" in out.stdout


@pytest.mark.parametrize("args", [
    ["decode", "commitlog", "/no/such/store"],
    ["decode", "commitlog", str(ROOT / "fixtures")],
    ["decode", "msgid", "C6336407"],
    ["decode", "msgid", "X633640700002A9F0000000000000206"],
    ["decode", "commitlog", STORE, "--phy-offset", "abc"],
    ["decode", "commitlog", STORE, "--body", "rot13"],
    ["decode", "index", str(ROOT / "fixtures" / "broker.conf")],
])
def test_bad_input_is_one_line_and_exit_2(args):
    out = run(*args)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith("rmqtool: error:")
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("args", [
    ["decode", "consumequeue", STORE, "--topic", "NoSuchTopic", "--queue", "0"],
    ["inspect", STORE, "--phy-offset", "999999999"],
    ["query", STORE, "--phy-offset", "999999999"],
    ["query", STORE, "--topic", "NoSuchTopic", "--queue", "0", "--queue-offset", "0"],
])
def test_what_the_store_does_not_hold_is_one_line_and_exit_3(args):
    out = run(*args)
    assert out.returncode == 3, out.stderr
    assert out.stderr.startswith("rmqtool: not found: ") and out.stderr.count("\n") == 1


def test_truncated_checkpoint_and_zero_index_file(tmp_path):
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "checkpoint").write_bytes(bytes(10))
    out = run("decode", "checkpoint", str(tmp_path))
    assert out.returncode == 2 and "too small" in out.stderr
    zeros = tmp_path / "zeros"
    zeros.write_bytes(bytes(5416))
    doc = json.loads(run("decode", "index", str(zeros), "--json").stdout)
    assert doc["files"][0]["header"]["indexCount"] == 0 and doc["files"][0]["entries"] == []


def test_corruption_gives_exit_1_and_error_objects(store_copy):
    seg = store_copy / "commitlog" / "00000000000000000000"
    raw = bytearray(seg.read_bytes())
    size = struct.unpack_from(">i", raw, 0)[0]
    raw[size + 4 : size + 8] = b"\x00\x00\x00\x00"  # the second record's magic
    seg.write_bytes(bytes(raw))
    out = run("decode", "commitlog", str(store_copy), "--jsonl")
    assert out.returncode == 1
    rows = jsonl(out.stdout)
    errors = [r for r in rows if "error" in r]
    assert len(errors) == 1 and errors[0]["offset"] == size and errors[0]["error"].startswith("bad magic")
    assert len([r for r in rows if "msgId" in r]) == 419


def test_read_only_commands_touch_nothing(store_copy):
    before = {p: p.stat().st_mtime_ns for p in store_copy.rglob("*")}
    for args in (["decode", "commitlog", str(store_copy), "--jsonl"], ["decode", "index", str(store_copy), "--json"],
                 ["decode", "consumequeue", str(store_copy), "--topic", "OrderTopic", "--queue", "0"],
                 ["decode", "checkpoint", str(store_copy)], ["inspect", str(store_copy), "--phy-offset", "0"]):
        assert run(*args).returncode == 0
    assert {p: p.stat().st_mtime_ns for p in store_copy.rglob("*")} == before
    assert not (store_copy / "abort").exists()


@pytest.mark.parametrize("args", [
    ["decode", "commitlog", STORE, "--config", CONF],
    ["decode", "commitlog", STORE, "--config", CONF, "--jsonl"],
    ["decode", "index", STORE, "--config", CONF],
    ["recover", STORE, "--config", CONF, "--dry-run", "--all"],
    ["info", STORE, "--config", CONF],
], ids=lambda a: " ".join(a[:2]))
def test_a_reader_that_stops_early_is_not_reported_as_damage(args):
    """`| head -1`: rich's answer to the closed pipe was exit 1, which the exit-code table reserves for
    damage found."""
    proc = subprocess.Popen([RMQTOOL, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=RUN_GUARD_S) == 0 and b"Traceback" not in err and b"error" not in err, err
