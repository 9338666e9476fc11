"""`bench replicate` picks its SYNC runs: ack modes and batch sizes, with or without the catch-up."""

import json

from cli_helpers import run


def test_bench_replicate_without_catch_up_runs_only_the_sync_puts_it_is_given():
    out = run("bench", "replicate", "--no-catch-up", "--ack", "written", "--batch", "1", "--batch", "4",
              "--sync-messages", "8", "--body-size", "1000", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["mode"], doc["catchUp"]) == ("replicate", None)
    assert [(r["ack"], r["batch"], r["puts"], r["messages"], r["statuses"]) for r in doc["sync"]] == [
        ("written", 1, 8, 8, {"PUT_OK": 8}), ("written", 4, 2, 8, {"PUT_OK": 2})]


def test_bench_replicate_with_an_unknown_ack_mode_is_a_one_line_refusal():
    out = run("bench", "replicate", "--no-catch-up", "--ack", "fsynced")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "rmqtool: error: Invalid value for '--ack': 'fsynced' is not one of 'flushed', 'written'. "
        "(see 'rmqtool bench replicate --help')"]
