"""`bench report`: report against info, each the best of its runs, with peak RSS and the page's size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import FIXTURE, run

from rmqtool.bench import report as bench_report


def test_the_fastest_run_of_each_counts_and_the_page_size_is_the_written_file(monkeypatch):
    """The processes stood in for: seconds in the order they were run."""
    seconds = {"info": iter([0.9, 0.5, 0.4]), "report": iter([2.0, 0.7, 0.6])}
    seen = []

    def run_process(args, *, keep_stdout=False):
        seen.append(args[0])
        if args[0] == "report":
            Path(args[args.index("--out") + 1]).write_bytes(b"x" * 1234)
        out = {"seconds": next(seconds[args[0]]), "exitCode": 0, "peakRssBytes": 100 if args[0] == "info" else 300}
        return {**out, "stdout": json.dumps({"messagesInQueues": 400})} if keep_stdout else out

    monkeypatch.setattr(bench_report, "run_process", run_process)
    doc = bench_report.run_report_bench(FIXTURE, messages=1, body_size=1, repeat=2)
    assert seen == ["info", "report"] * 3
    assert doc == {"mode": "report", "messages": 400, "storeBytes": 3 * 65536,
                   "info": {"seconds": 0.4, "peakRssBytes": 100}, "report": {"seconds": 0.6, "peakRssBytes": 300},
                   "reportToInfo": 1.5, "htmlBytes": 1234}


def test_a_command_that_fails_is_named(monkeypatch):
    monkeypatch.setattr(bench_report, "run_process", lambda args, keep_stdout=False: {
        "seconds": 1, "exitCode": 2, "peakRssBytes": 0, **({"stdout": ""} if keep_stdout else {})})
    with pytest.raises(Exception, match=r"bench report: `rmqtool info .* --json` exited 2"):
        bench_report.run_report_bench(FIXTURE, messages=1, body_size=1)


def test_bench_report_on_the_fixture_store():
    out = run("bench", "report", str(FIXTURE), "--repeat", "1", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["messages"] == 400 and doc["htmlBytes"] > 0 and doc["report"]["peakRssBytes"] > 0
