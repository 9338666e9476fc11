"""A short command pays only for what it uses: one query per process is how scripts call rmqtool."""

import json

from cli_helpers import FIXTURE, command_probe, run


def _rich(got: dict) -> list[str]:
    return [m for m in got["modules"] if m.startswith("rich.")]


def test_a_json_query_imports_no_rich_and_builds_only_its_command():
    got = command_probe("query", FIXTURE, "--phy-offset", "0", "--json")
    assert got["code"] == 0
    assert got["built"] == [["query"]]
    assert not [m for m in _rich(got) if m in ("rich.console", "rich.table", "rich.text", "rich.markdown")]


def test_a_card_still_draws_with_rich():
    got = command_probe("query", FIXTURE, "--phy-offset", "0")
    assert got["code"] == 0 and "rich.console" in _rich(got) and "rich.table" in _rich(got)


def test_a_card_imports_numpy_to_show_two_times():
    """A card's times are two values: written without numpy, whose import was half a card's start."""
    got = command_probe("query", FIXTURE, "--phy-offset", "0")
    assert got["code"] == 0 and "numpy" not in got["modules"]


def test_help_and_an_unknown_command_see_every_command():
    assert len(command_probe("--help")["built"][0]) >= 12
    out = run("quer", FIXTURE)
    assert out.returncode == 2 and "Did you mean 'query'?" in out.stderr


def test_a_group_built_alone_still_lists_its_subcommands():
    out = run("decode", "--help")
    assert out.returncode == 0
    for sub in ("commitlog", "consumequeue", "index", "checkpoint"):
        assert sub in out.stdout


def test_bench_start_times_each_short_command_in_fresh_processes():
    out = run("bench", "start", FIXTURE, "--runs", "2", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["mode"] == "start" and doc["runs"] == 2
    assert set(doc) == {"mode", "runs", "version", "queryJson", "queryCard", "infoJson", "verifyJson"}
    for name in ("version", "queryJson", "queryCard", "infoJson", "verifyJson"):
        times = doc[name]
        assert 0 < times["wallMsMin"] <= times["wallMsMedian"] and times["cpuMsMedian"] > 0


def test_bench_start_refuses_what_is_not_a_store(tmp_path):
    (tmp_path / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    out = run("bench", "start", tmp_path / "passwd", "--runs", "1")
    assert out.returncode == 2 and "not a" in out.stderr and "Traceback" not in out.stderr
