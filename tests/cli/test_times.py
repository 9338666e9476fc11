"""Times typed as epoch milliseconds or ISO 8601, and stored times shown with UTC beside them."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from cli_helpers import CONF, FIXTURE, run


def ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).replace(tzinfo=timezone.utc).timestamp() * 1000)


def first_of_queue(args: list[str]) -> dict:
    out = run("query", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--queue", "0", "--json", *args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_query_time_takes_epoch_ms_and_the_same_instant_in_iso_8601():
    out = run("query", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--queue", "0", "--queue-offset", "3",
              "--json")
    stored = json.loads(out.stdout)["messages"][0]["storeTimestamp"]
    iso = datetime.fromtimestamp(stored / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")
    by_ms = first_of_queue(["--time", str(stored)])
    assert first_of_queue(["--time", iso]) == by_ms
    assert first_of_queue(["--time", iso.replace("+00:00", "Z")]) == by_ms


def test_a_date_alone_is_its_midnight_utc(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"topic": "T", "bodyText": "x"}\n')
    assert run("import", str(tmp_path / "s"), str(rows), "--config", CONF, "--store-timestamp",
               "2026-01-02").returncode == 0
    out = run("decode", "commitlog", str(tmp_path / "s"), "--config", CONF, "--jsonl")
    assert json.loads(out.stdout)["storeTimestamp"] == ms("2026-01-02T00:00:00") == 1767312000000


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01", "12:00"])
def test_a_time_that_is_neither_ms_nor_iso_is_one_line_exit_2(value):
    out = run("query", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--queue", "0", "--time", value)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert f"--time {value!r} is neither epoch milliseconds nor an ISO 8601 time" in out.stderr


def test_the_query_card_shows_stored_times_in_utc_beside_the_number():
    out = run("query", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--queue", "0", "--queue-offset", "0")
    doc = json.loads(run("query", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--queue", "0", "--queue-offset",
                         "0", "--json").stdout)["messages"][0]
    utc = datetime.fromtimestamp(doc["storeTimestamp"] / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    assert f"{doc['storeTimestamp']} ({utc}" in out.stdout


def test_query_time_with_jsonl_prints_one_json_line_not_a_panel():
    out = run("query", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--queue", "0", "--time", "0", "--jsonl")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0]) == first_of_queue(["--time", "0"])
