"""A store whose middle segment was deleted: `info` lists the hole, a lookup that falls in it says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import CONF, FIXTURE, fixture_copy, run

SEG = 65536
MIDDLE = f"{SEG:020d}"
IN_HOLE = SEG + 830  # a record of the deleted segment (its fourth)


@pytest.fixture
def holed(tmp_path: Path) -> Path:
    store = fixture_copy(tmp_path)
    (store / "commitlog" / MIDDLE).unlink()
    return store


def test_info_hid_a_deleted_middle_segment(holed: Path):
    out = run("info", holed, "--config", CONF, "--json")
    assert out.returncode == 0, out.stderr
    log = json.loads(out.stdout)["commitlog"]
    assert (log["segments"], log["holes"]) == (2, [{"from": SEG, "to": 2 * SEG, "missing": [MIDDLE]}])
    out = run("info", holed, "--config", CONF)
    [line] = [row for row in out.stdout.splitlines() if " holes " in row]
    assert f"{SEG} .. {2 * SEG} (segment {MIDDLE} missing)" in line


def test_info_of_a_whole_log_lists_no_hole():
    out = run("info", FIXTURE, "--config", CONF, "--json")
    assert json.loads(out.stdout)["commitlog"]["holes"] == []


def test_query_in_the_hole_said_outside_the_commitlog(holed: Path):
    msg_id = json.loads(run("query", FIXTURE, "--phy-offset", IN_HOLE, "--json").stdout)["messages"][0]["msgId"]
    hole = (f"offset {IN_HOLE} falls in a hole of the commitlog: segment {MIDDLE} ({SEG}..{2 * SEG}) is missing "
            f"(segments cover 0..{SEG}, {2 * SEG}..{3 * SEG})")
    out = run("query", holed, "--config", CONF, "--msg-id", msg_id)
    assert out.returncode == 3, out.stderr
    assert hole in out.stderr and "outside" not in out.stderr
    out = run("query", holed, "--config", CONF, "--phy-offset", IN_HOLE)
    assert (out.returncode, out.stderr) == (3, f"rmqtool: not found: {hole}\n")


def test_decode_from_an_offset_in_the_hole_started_after_it_without_a_word(holed: Path):
    out = run("decode", "commitlog", holed, "--config", CONF, "--phy-offset", IN_HOLE, "--count", "1", "--jsonl")
    assert out.returncode == 0 and json.loads(out.stdout)["commitLogOffset"] == 2 * SEG
    assert out.stderr == (f"offset {IN_HOLE} falls in a hole of the commitlog: segment {MIDDLE} ({SEG}..{2 * SEG}) "
                          f"is missing (segments cover 0..{SEG}, {2 * SEG}..{3 * SEG}): reading from the next segment "
                          "on\n")


def test_a_queue_run_into_the_hole_printed_nothing_of_what_it_found(holed: Path):
    entries = json.loads(run("decode", "consumequeue", FIXTURE, "--topic", "OrderTopic", "--queue", "0",
                             "--json").stdout)["entries"]
    first_lost = next(e["queueOffset"] for e in entries if SEG <= e["commitLogOffset"] < 2 * SEG)
    out = run("query", holed, "--config", CONF, "--topic", "OrderTopic", "--queue", "0", "--queue-offset",
              first_lost - 2, "--count", "3", "--json")
    assert out.returncode == 3
    assert [m["queueOffset"] for m in json.loads(out.stdout)["messages"]] == [first_lost - 2, first_lost - 1]
    assert out.stderr.startswith(f"rmqtool: not found: queue offset {first_lost}: offset ")
    assert f"falls in a hole of the commitlog: segment {MIDDLE}" in out.stderr
