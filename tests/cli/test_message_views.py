"""How messages and values look to a person: a compressed body decompressed in every view, a binary body
as \\xNN, no Python values (None, True) in a card, and table columns cut only when the row has no room."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest
from cli_helpers import CONF, FIXTURE, ROOT, on_a_terminal, table_rows
from cli_helpers import run as piped
from rich.cells import cell_len

from rmqtool.cli.grid import write_table
from rmqtool.cli.messages import MESSAGE_COLUMNS
from rmqtool.cli.screen import PIPED_WIDTH

STORE = str(FIXTURE)
COMPRESSED = 604  # the fixture's first zlib body: "message 3 lorem ipsum lorem ipsum lorem ipsum "
PREPARED = 11791  # a prepared transaction: in no consume queue (tagsCode null), not compressed


def run(*args: str, columns: int | None = None) -> subprocess.CompletedProcess:
    """rmqtool with its output piped (never cut), or on a terminal `columns` wide."""
    if columns is not None:
        return on_a_terminal(*args, columns=columns)
    return piped(*args)


def card(stdout: str) -> dict[str, str]:
    """The field -> value rows of a key/value card."""
    rows = [line.split("│") for line in stdout.splitlines() if line.count("│") == 3]
    return {r[1].strip(): r[2].strip() for r in rows}


def jsonl(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


@pytest.fixture(scope="module")
def binary_store(tmp_path_factory) -> Path:
    """Bodies at 0: not UTF-8; at the next record: UTF-8 cut inside its last character."""
    root = tmp_path_factory.mktemp("bodies")
    store = root / "s"
    for name, body in (("a", b"\xff\xfe\x00bin\xd7\xa9\x1b"), ("b", b"abc\xe4\xb8")):
        (root / name).write_bytes(body)
        out = run("append", store, "--config", CONF, "--topic", "B", "--body-file", root / name)
        assert out.returncode == 0, out.stderr
    return store


# compressed bodies

def test_the_decode_table_shows_a_compressed_body_decompressed_as_jsonl_does():
    args = ("decode", "commitlog", STORE, "--config", CONF, "--phy-offset", COMPRESSED, "--count", "1")
    plain = jsonl(run(*args, "--jsonl", "--body", "text").stdout)[0]
    assert plain["compression"] == "zlib" and plain["body"] == "message 3 lorem ipsum lorem ipsum lorem ipsum "
    header, rows = table_rows(run(*args, "--body", "text").stdout)
    assert rows[0][header.index("body")] == "message 3 lorem ipsum lorem ipsum lorem ipsum"
    header, rows = table_rows(run(*args, "--body", "hex").stdout)
    assert rows[0][header.index("body")] == plain["body"].encode().hex()
    stored = jsonl(run(*args, "--jsonl", "--body", "stored").stdout)[0]["body"]
    header, rows = table_rows(run(*args, "--body", "stored").stdout)
    assert rows[0][header.index("body")] == stored  # --body stored is the stored bytes, in every view


def test_inspect_shows_what_a_compressed_body_inflates_to():
    out = run("inspect", STORE, "--config", CONF, "--phy-offset", COMPRESSED)
    row = next(line for line in out.stdout.splitlines() if line.startswith("│ body "))
    assert "decompressed (zlib, 46 bytes): 'message 3 lorem ipsum lorem ipsum lorem ipsum '" in row, row


# binary and odd text bodies

def test_inspect_shows_a_binary_body_as_escapes_not_replacement_characters(binary_store):
    out = run("inspect", binary_store, "--config", CONF, "--phy-offset", "0")
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith("│ body "))
    assert "'\\xff\\xfe\\x00bin\\xd7\\xa9\\x1b'" in row and "\ufffd" not in out.stdout, row


def test_a_body_that_ends_inside_a_character_is_shown_as_escapes_not_as_shorter_text(binary_store):
    second = jsonl(run("decode", "commitlog", binary_store, "--config", CONF, "--jsonl").stdout)[1]
    header, rows = table_rows(run("decode", "commitlog", binary_store, "--config", CONF, "--body", "text").stdout)
    assert [r[header.index("body")] for r in rows] == ["\\xff\\xfe\\x00bin\\xd7\\xa9\\x1b", "abc\\xe4\\xb8"]
    out = run("inspect", binary_store, "--config", CONF, "--phy-offset", second["commitLogOffset"])
    row = next(line for line in out.stdout.splitlines() if line.startswith("│ body "))
    assert "'abc\\xe4\\xb8'" in row, row
    shown = card(run("query", binary_store, "--config", CONF, "--phy-offset", second["commitLogOffset"]).stdout)
    assert shown["body"] == "abc\\xe4\\xb8"


# Python values

def test_a_query_card_shows_an_unknown_value_as_a_dash_not_none():
    shown = card(run("query", STORE, "--config", CONF, "--phy-offset", PREPARED).stdout)
    assert shown["tagsCode"] == "-" and shown["compression"] == "-"
    assert shown["msgId"] == "C633640700002A9F0000000000002E0F"


def test_a_load_summary_shows_yes_and_no_not_true_and_false(tmp_path):
    args = ("spark-load", ROOT / "fixtures" / "rows.jsonl", "--store", tmp_path / "s", "--config", CONF)
    first = run(*args)
    assert first.returncode == 0, first.stderr
    assert {k: card(first.stdout)[k] for k in ("alreadyLoaded", "inProcess")} == {"alreadyLoaded": "no",
                                                                                   "inProcess": "yes"}
    again = card(run(*args).stdout)
    assert again["alreadyLoaded"] == "yes" and again["messages"] == "20"


# table widths

def test_a_table_with_room_for_the_whole_row_cuts_no_cell_at_200_columns():
    out = run("decode", "commitlog", STORE, "--config", CONF, "--phy-offset", "22427", "--count", "2")
    header, rows = table_rows(out.stdout)
    assert "…" not in out.stdout and "columns left out" not in out.stderr
    assert header == [c.name for c in MESSAGE_COLUMNS]
    assert rows == [["22427", "165", "PaymentTopic", "0", "6", "2023-11-14T22:13:20.364Z",
                     "C633640700002A9F000000000000579B", "transaction-commit", "TagC", "", "message 52"],
                    ["22592", "184", "AuditLogTopic", "2", "0", "2023-11-14T22:13:20.371Z",
                     "C633640700002A9F0000000000005840", "transaction-rollback", "🚀rocket", "",
                     "message 53 lorem ipsum"]]
    out = run("decode", "commitlog", STORE, "--config", CONF, "--phy-offset", "16093", "--count", "1")
    assert "…" not in out.stdout and table_rows(out.stdout)[1] == [
        ["16093", "208", "OrderTopic", "3", "2", "2023-11-14T22:13:20.189Z", "C633640700002A9F0000000000003EDD", "",
         "TagC", "order-27 shared-2 中文键", "message 27 lorem ipsum"]]


SHORT_FIRST_ROW = [[0], [100], ["T"], [0], [0], ["2023-11-14T22:13:20.000Z"], ["C633640700002A9F0000000000000000"],
                   [""], [""], [""], ["x"]]  # a first row that sizes every text column small


def test_a_later_row_is_not_cut_where_the_width_has_room():
    out = io.StringIO()
    later = [[100], [200], ["PaymentTopic"], [1], [0], ["2023-11-14T22:13:20.007Z"],
             ["C633640700002A9F0000000000000064"], ["compressed(zlib)"], ["TagB"], ["order-1"],
             ["message 1 lorem ipsum lorem ipsum"]]
    assert write_table(out, MESSAGE_COLUMNS, [SHORT_FIRST_ROW, later], width=200) == 2
    assert "…" not in out.getvalue()
    assert table_rows(out.getvalue())[1][1] == ["100", "200", "PaymentTopic", "1", "0", "2023-11-14T22:13:20.007Z",
                                               "C633640700002A9F0000000000000064", "compressed(zlib)", "TagB",
                                               "order-1", "message 1 lorem ipsum lorem ipsum"]


def test_a_later_longer_cell_is_cut_in_a_pipe():
    out = io.StringIO()
    later = [[100], [200], ["a-rather-long-topic-name-of-forty-chars!"], [1], [0], ["2023-11-14T22:13:20.007Z"],
             ["C633640700002A9F0000000000000064"], ["compressed(zlib)"], ["TagB"], ["order-1 order-2 order-3 x"],
             ["message 1 " * 20]]
    assert write_table(out, MESSAGE_COLUMNS, [SHORT_FIRST_ROW, later], width=PIPED_WIDTH) == 2
    row = out.getvalue().splitlines()[-1]
    assert "…" not in out.getvalue()
    for cell in ("a-rather-long-topic-name-of-forty-chars!", "order-1 order-2 order-3 x", ("message 1 " * 20).strip()):
        assert cell in row


def test_at_120_columns_the_msgid_stays_and_tags_keys_and_sysflag_go_first():
    out = run("decode", "commitlog", STORE, "--config", CONF, "--phy-offset", "239", "--count", "2", columns=120)
    header, rows = table_rows(out.stdout)
    assert header == ["phyOffset", "topic", "queue", "queueOffset", "storeTimestamp", "msgId", "body"]
    assert rows == [["239", "PaymentTopic", "1", "0", "2023-11-14T22:13:20.007Z", "C633640700002A9F00000000000000EF",
                     "message 1 lor…"],
                    ["415", "AuditLogTopic", "2", "0", "2023-11-14T22:13:20.014Z", "C633640700002A9F000000000000019F",
                     "message 2 lor…"]]
    assert max(cell_len(line) for line in out.stdout.splitlines()) <= 120
    assert "columns left out at this width: sysFlag, keys, tags, size" in out.stderr


def test_at_80_columns_the_msgid_is_whole():
    out = run("decode", "commitlog", STORE, "--config", CONF, "--phy-offset", "239", "--count", "2", columns=80)
    header, rows = table_rows(out.stdout)
    assert header == ["phyOffset", "topic", "storeTimestamp", "msgId"]  # the topic shrinks for the time
    assert rows == [["239", "PaymentT…", "2023-11-14T22:13:20.007Z", "C633640700002A9F00000000000000EF"],
                    ["415", "AuditLog…", "2023-11-14T22:13:20.014Z", "C633640700002A9F000000000000019F"]]
    assert max(cell_len(line) for line in out.stdout.splitlines()) <= 80
    assert "columns left out at this width: sysFlag, keys, tags, size, body, queue, queueOffset" in out.stderr
