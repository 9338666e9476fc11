"""A producer's message meets the broker's send rules on every way in (append, append --batch, import of
producer rows, spark-load): a topic of ^[%|a-zA-Z0-9_-]+$ only, and no user property of a name the Java
client reserves (MessageConst.STRING_HASH_SET). An export's records, stored already, keep their properties."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import CONF, run
from refusals import GOOD, assert_refused, nothing

SPACE_TOPIC = "'a b' holds ' ': a topic is letters, digits, %, |, - and _ (the broker's ^[%|a-zA-Z0-9_-]+$)"
RESERVED = "property {!r} is a system property the broker's client refuses as a user property"
KEYS_HINT = ": set it with --keys (in a row: its keys field)"


def decoded(store: Path) -> list[dict]:
    out = run("decode", "commitlog", str(store), "--config", str(CONF), "--jsonl")
    return [r for r in map(json.loads, out.stdout.splitlines()) if "msgId" in r]


BROKER_TOPICS = ["%RETRY%group-1", "%DLQ%group-1", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "A|b"]


@pytest.mark.parametrize("command", ["append", "import"])
def test_producer_rows_on_a_topic_with_a_space_are_stored(tmp_path, command):
    assert_refused(tmp_path, command, b'{"topic": "a b", "bodyText": "x"}', nothing("FILE:2", "topic", SPACE_TOPIC))
    src = tmp_path / "ok.jsonl"  # the topics the broker writes itself pass, and a row may bring its own UNIQ_KEY
    src.write_text("".join(json.dumps({"topic": t, "bodyText": t, "properties": {"UNIQ_KEY": f"{i:032X}"}}) + "\n"
                           for i, t in enumerate(BROKER_TOPICS)))
    inputs = [str(src)] if command == "import" else ["--batch", str(src)]
    out = run(command, str(tmp_path / "s"), *inputs, "--config", str(CONF))
    assert out.returncode == 0, out.stderr
    assert [(m["topic"], m["properties"]["UNIQ_KEY"]) for m in decoded(tmp_path / "s")] == [
        (t, f"{i:032X}") for i, t in enumerate(BROKER_TOPICS)]


def test_append_stores_a_topic_with_a_space(tmp_path):
    assert_refused(tmp_path, "append", None, f"MESSAGE_ILLEGAL: topic: {SPACE_TOPIC}", "--topic", "a b",
                   "--body", "x")


def test_spark_load_stores_a_topic_with_a_space(tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_text(GOOD + '\n{"topic": "a b", "bodyText": "x"}\n')
    out = run("spark-load", str(src), "--store", str(tmp_path / "new"), "--config", str(CONF))
    assert (out.returncode, out.stderr) == (2, f"rmqtool: error: {nothing(f'{src}:2', 'topic', SPACE_TOPIC)}\n")
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(("name", "hint"), [("KEYS", KEYS_HINT), ("DELAY", ": set it with --delay-level (in a row: "
                                                                         "its delayLevel field)"), ("PGROUP", "")])
def test_a_reserved_property_name_in_a_row_is_stored(tmp_path, name, hint):
    line = json.dumps({"topic": "T", "bodyText": "x", "properties": {"p": "v", name: "3"}}).encode()
    assert_refused(tmp_path, "import", line, nothing("FILE:2", "properties", RESERVED.format(name) + hint))
    store = tmp_path / "a"  # an export's records carry system properties, and import them as they were
    assert run("append", str(store), "--config", str(CONF), "--topic", "T", "--keys", "k1 k2", "--tags", "tg",
               "--delay-level", "2", "--property", "p=v", "--body", "x").returncode == 0
    export = tmp_path / "e.jsonl"
    assert run("export", str(store), "--out", str(export)).returncode == 0
    out = run("import", str(tmp_path / "b"), str(export), "--config", str(CONF))
    assert out.returncode == 0, out.stderr
    got = decoded(tmp_path / "b")
    assert [m["propertiesString"] for m in got] == [m["propertiesString"] for m in decoded(store)]
    assert {"KEYS", "TAGS", "DELAY", "REAL_TOPIC", "REAL_QID", "UNIQ_KEY", "p"} == set(got[0]["properties"])


def test_append_property_keys_is_stored_as_a_user_property(tmp_path):
    assert_refused(tmp_path, "append", None, RESERVED.format("KEYS") + KEYS_HINT, "--topic", "T", "--body", "x",
                   "--property", "KEYS=k1")
