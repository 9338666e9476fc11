"""Times typed as epoch milliseconds or ISO 8601, and stored times shown one way: ISO 8601 with Z."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

import numpy as np
import pytest
from cli_helpers import CONF, FIXTURE, fixture_copy, run


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


ISO_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
# another layout, a bare " UTC", or bare epoch milliseconds of 2017 .. 2033
OTHER_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d|\d\d:\d\d:\d\d\.\d{3}(?!Z)| UTC\b|\b1[5-9]\d{11}\b")


@pytest.mark.parametrize("args", [
    ["info", FIXTURE],
    ["decode", "checkpoint", FIXTURE / "checkpoint"],
    ["decode", "commitlog", FIXTURE, "--config", CONF, "--count", "3"],
    ["decode", "index", FIXTURE, "--config", CONF, "--entries"],
    ["query", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--queue", "0", "--queue-offset", "0"],
    ["query", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--queue", "0", "--time", "0"],
    ["query", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--key", "order-3"],
    ["inspect", FIXTURE, "--config", CONF, "--phy-offset", "0"],
    ["append", "{tmp}", "--config", CONF, "--topic", "T", "--body", "x"],
], ids=lambda a: " ".join(map(str, a[:2])) if isinstance(a, list) else a)
def test_a_stored_time_reads_one_way_in_every_view(args, tmp_path):
    args = [str(tmp_path / "s") if a == "{tmp}" else a for a in args]
    out = run(*args, "--body", "none") if args[0] == "query" else run(*args)
    assert out.returncode == 0, out.stderr
    assert ISO_Z.search(out.stdout), out.stdout[:400]
    assert not OTHER_TIME.search(out.stdout), OTHER_TIME.search(out.stdout)


def test_the_query_time_card_shows_times_not_raw_milliseconds():
    out = run("query", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--queue", "0", "--time", "1700000000000")
    card = [" ".join(line.strip("│ ").split()) for line in out.stdout.splitlines()]  # as wide as its msgId
    assert "timestamp │ 2023-11-14T22:13:20.000Z" in card
    assert "1700000000000" not in out.stdout


def test_info_says_how_far_the_data_runs_past_the_checkpoint_in_days_and_hours(tmp_path):
    from rmqtool.structures import checkpoint

    store = fixture_copy(tmp_path)
    cp = checkpoint.decode((store / "checkpoint").read_bytes())
    behind = 3 * 86_400_000 + 7 * 3_600_000 + 5_000
    stale = checkpoint.Checkpoint(cp.physicMsgTimestamp - behind, cp.logicsMsgTimestamp, cp.indexMsgTimestamp)
    (store / "checkpoint").write_bytes(checkpoint.encode(stale))
    out = run("info", store)
    assert f"newest record is 3d 7h ({behind} ms) after the checkpoint" in out.stdout


QUEUE_0 = ("query", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--queue", "0")


def _refused(out) -> str:
    assert out.returncode == 2 and "Traceback" not in out.stderr and out.stderr.count("\n") == 1, out.stderr
    return out.stderr


def test_a_query_time_in_seconds_by_mistake_is_refused_naming_both_readings():
    assert _refused(run(*QUEUE_0, "--time", "1700000000")) == (
        "rmqtool: error: --time 1700000000 reads as seconds (2023-11-14T22:13:20.000Z); as milliseconds it is "
        "1970-01-20T16:13:20.000Z: give milliseconds or ISO 8601, or --time-unit s\n")


def test_time_unit_s_reads_a_number_as_seconds_and_ms_takes_it_as_it_is():
    assert first_of_queue(["--time", "1700000000", "--time-unit", "s"]) == first_of_queue(["--time", "1700000000000"])
    as_ms = first_of_queue(["--time", "1700000000", "--time-unit", "ms"])
    assert (as_ms["timestamp"], as_ms["queueOffset"]) == (1700000000, first_of_queue(["--time", "0"])["queueOffset"])
    assert first_of_queue(["--time", "5", "--time-unit", "ms"])["timestamp"] == 5


@pytest.mark.parametrize("value, message", [
    ("-5", "--time -5 is negative: as milliseconds it is 1969-12-31T23:59:59.995Z, as seconds "
           "1969-12-31T23:59:55.000Z, both before 1970: give milliseconds or ISO 8601 from 1970 on"),
    ("1969-12-31T23:59:59Z", "--time 1969-12-31T23:59:59Z is 1969-12-31T23:59:59.000Z, before 1970: a store time "
                             "is epoch milliseconds from 1970-01-01T00:00:00.000Z on"),
])
def test_a_query_time_before_1970_is_refused(value, message):
    assert _refused(run(*QUEUE_0, "--time", value)) == f"rmqtool: error: {message}\n"
    assert _refused(run(*QUEUE_0, "--time", value, "--time-unit", "ms")) == f"rmqtool: error: {message}\n"


@pytest.mark.parametrize("args, option", [
    (["--time", "9223372036854775808"], "--time 9223372036854775808"),
    (["--time", "9223372036854776", "--time-unit", "s"], "--time 9223372036854776 s"),
])
def test_a_time_past_a_long_of_milliseconds_is_refused(args, option):
    assert f"{option} is past the last time a store can hold (9223372036854775807 ms)" in _refused(
        run(*QUEUE_0, *args))


def test_key_query_begin_in_seconds_is_refused():
    out = run("query", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--key", "order-3", "--begin", "1700000000")
    assert "--begin 1700000000 reads as seconds (2023-11-14T22:13:20.000Z)" in _refused(out)


def test_an_export_window_in_seconds_is_refused_and_writes_no_file(tmp_path):
    out = run("export", FIXTURE, "--config", CONF, "--end", "1700000000", "--out", tmp_path / "x.jsonl")
    assert "--end 1700000000 reads as seconds (2023-11-14T22:13:20.000Z); as milliseconds it is " \
           "1970-01-20T16:13:20.000Z" in _refused(out)
    assert not list(tmp_path.iterdir())
    by_seconds = run("export", FIXTURE, "--config", CONF, "--end", "1700000000", "--time-unit", "s")
    assert by_seconds.returncode == 0 and by_seconds.stdout == run("export", FIXTURE, "--config", CONF, "--end",
                                                                   "1700000000000").stdout


def test_an_import_store_timestamp_in_seconds_is_refused_and_makes_no_store(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"topic": "T", "bodyText": "x"}\n')
    out = run("import", tmp_path / "s", rows, "--config", CONF, "--store-timestamp", "1767312000")
    assert "--store-timestamp 1767312000 reads as seconds (2026-01-02T00:00:00.000Z)" in _refused(out)
    assert not (tmp_path / "s").exists()
    assert run("import", tmp_path / "s", rows, "--config", CONF, "--store-timestamp", "1767312000",
               "--time-unit", "s").returncode == 0
    stored = run("decode", "commitlog", tmp_path / "s", "--config", CONF, "--jsonl")
    assert json.loads(stored.stdout)["storeTimestamp"] == 1767312000000


def test_an_import_store_timestamp_past_a_long_is_one_line_not_an_overflow_traceback(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"topic": "T", "bodyText": "x"}\n')
    out = run("import", tmp_path / "s", rows, "--config", CONF, "--store-timestamp", "9223372036854775808")
    assert "--store-timestamp 9223372036854775808 is past the last time a store can hold" in _refused(out)


@pytest.mark.parametrize("args, message", [
    (["query", FIXTURE, "--topic", "OrderTopic", "--key", "order-3", "--time-unit", "s"],
     "--time-unit s says how to read --time or --begin or --end: give one of them"),
    (["export", FIXTURE, "--time-unit", "ms"], "--time-unit ms says how to read --begin or --end: give one of them"),
    (["consumers", FIXTURE, "--time-unit", "s"], "--time-unit s says how to read --to-time: give one of them"),
])
def test_a_time_unit_without_a_time_is_refused(args, message):
    assert _refused(run(*args, "--config", CONF)) == f"rmqtool: error: {message}\n"


TIME_OPTIONS = {("query", "--time"), ("query", "--begin"), ("query", "--end"), ("export", "--begin"),
                ("export", "--end"), ("consumers", "--to-time"), ("import", "--store-timestamp"),
                ("spark-load", "--store-timestamp"), ("decode commitlog", "--begin"), ("decode commitlog", "--end")}


def test_every_time_option_says_a_time_without_a_zone_is_utc_and_has_a_time_unit():
    import click
    import typer

    from rmqtool.cli.app import app

    def walk(cmd, path=()):
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                yield from walk(sub, (*path, name))
        else:
            yield " ".join(path), cmd

    found = set()
    for path, cmd in walk(typer.main.get_command(app)):
        names = {o for p in cmd.params for o in getattr(p, "opts", ())}
        for param in cmd.params:
            if "ISO 8601" in (getattr(param, "help", None) or ""):
                found.add((path, param.opts[0]))
                assert "a time without a zone is UTC" in param.help, (path, param.opts)
                assert "--time-unit" in names, path
    assert found == TIME_OPTIONS


def test_query_time_with_jsonl_prints_one_json_line_not_a_panel():
    out = run("query", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--queue", "0", "--time", "0", "--jsonl")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0]) == first_of_queue(["--time", "0"])


@pytest.mark.parametrize("ms", [0, -1, 999, 1700000000000, 253402300799999, -62135596800000, 253402300800000,
                                -62135596800001, 2**63 - 1, -(2**63)])
def test_a_time_alone_and_a_column_of_times_read_alike(ms):
    from rmqtool.text import iso_time, iso_times

    assert iso_time(ms) == iso_times([ms])[0] == iso_times(np.array([ms], dtype=np.int64))[0]
