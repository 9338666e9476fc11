"""Strings from a store reach a terminal as text, never as control sequences it would obey."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import CONF
from cli_helpers import run as run_cli

EVIL_BODY = b"evil\x1b]0;PWNED\x07\x1b[31mred"
EVIL_TOPIC = "T\x1b[2J\u202e"
CONTROL_BYTES = (b"\x1b", b"\x07", "\u202e".encode(), "\x9b".encode())


def run(*args: str):
    return run_cli(*args, text=False)


@pytest.fixture(scope="module")
def evil_store(tmp_path_factory) -> Path:
    """The broker (and so `append`) refuses such a topic from a producer; a store written by another writer
    may still hold one, so the library writes it."""
    from rmqtool.engine.config import StoreConfig
    from rmqtool.engine.producer import build_message
    from rmqtool.engine.put import put_one

    store = tmp_path_factory.mktemp("evil") / "s"
    msg = build_message(EVIL_TOPIC, EVIL_BODY, keys="k\x1b[2J", user={"p": "\x9b1m"})
    assert put_one(store, StoreConfig.from_file(CONF)[0], msg, flush=None, register_topics=True,
                   keep_store_host=False).ok
    binary = store.parent / "b.bin"
    binary.write_bytes(b"\xff\xfe\x00bin\x1b")
    assert run("append", str(store), "--config", CONF, "--topic", "B", "--body-file", str(binary)).returncode == 0
    return store


@pytest.mark.parametrize("args", [
    ["query", "{s}", "--phy-offset", "0"],
    ["query", "{s}", "--topic", EVIL_TOPIC, "--key", "k\x1b[2J"],
    ["decode", "commitlog", "{s}"],
    ["decode", "commitlog", "{s}", "--body", "text"],
    ["inspect", "{s}", "--phy-offset", "0"],
    ["info", "{s}"],
    ["decode", "consumequeue", "{s}", "--topic", EVIL_TOPIC, "--queue", "0"],
])
def test_a_body_topic_key_or_property_with_escape_sequences_is_shown_escaped(evil_store, args):
    out = run(*[a.format(s=evil_store) for a in args], "--config", CONF)
    assert out.returncode == 0, out.stderr
    for control in CONTROL_BYTES:
        assert control not in out.stdout and control not in out.stderr, (args, control)


def test_the_query_card_shows_the_body_and_a_binary_body_as_escapes(evil_store):
    out = run("query", str(evil_store), "--phy-offset", "0", "--config", CONF)
    text = out.stdout.decode()
    assert "evil\\x1b]0;PWNED\\x07\\x1b[31mred" in text and "T\\x1b[2J\\u202e" in text
    second = json.loads(run("query", str(evil_store), "--phy-offset", "0", "--json", "--config",
                            CONF).stdout)["messages"][0]
    offset = second["commitLogOffset"] + second["storeSize"]
    out = run("query", str(evil_store), "--phy-offset", str(offset), "--config", CONF)
    assert "\\xff\\xfe\\x00bin\\x1b" in out.stdout.decode()


def test_json_output_keeps_the_exact_strings(evil_store):
    out = run("query", str(evil_store), "--phy-offset", "0", "--json", "--body", "text", "--config", CONF)
    m = json.loads(out.stdout)["messages"][0]
    assert m["topic"] == EVIL_TOPIC and m["body"] == EVIL_BODY.decode() and m["properties"]["p"] == "\x9b1m"


def test_an_error_naming_a_store_string_is_one_escaped_line(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"topic": "a/\x1b[31m\nb", "bodyText": "x"}) + "\n")
    out = run("import", str(tmp_path / "s"), str(rows), "--config", CONF)
    assert out.returncode == 2 and out.stderr.count(b"\n") == 1 and b"\x1b" not in out.stderr
    assert b"\\x1b[31m\\nb" in out.stderr


def test_a_body_cut_inside_a_character_and_a_binary_body_are_shown_without_raw_bytes():
    from rmqtool.cli.output import printable_bytes

    assert printable_bytes("中文".encode()[:4]) == "中"  # a preview ending inside 文
    assert printable_bytes(b"\xff\xfe\x00bin\x1b\\") == "\\xff\\xfe\\x00bin\\x1b\\\\"
    assert printable_bytes(b"caf\xc3\xa9\x1b[31m") == "café\\x1b[31m"
