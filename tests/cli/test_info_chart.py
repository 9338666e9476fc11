"""`info` draws the timeline under its summary in a terminal, in the terminal's width; `--no-chart` and a pipe
leave it out."""

from __future__ import annotations

import pytest
from cli_helpers import on_a_terminal, run

from rmqtool.cli.timechart import chart_lines

# the gapped store: 36 buckets of 10 s merged two by two; the 5 minutes without a message are empty bars
STARTS = [f"2023-11-14T22:{13 + (20 + 20 * i) // 60:02d}:{(20 + 20 * i) % 60:02d}Z" for i in range(18)]
COUNTS = [138, 52] + [0] * 14 + [88, 122]


def _chart(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    at = lines.index("timeline: messages per 20s (UTC)")
    return lines[at : at + 19]


@pytest.mark.parametrize(("columns", "bars"), [(60, [35, 13] + [0] * 14 + [22, 31]),
                                               (100, [75, 28] + [0] * 14 + [48, 66])])
def test_info_on_a_terminal_draws_one_bar_per_merged_bucket_in_its_width(gapped_store, columns, bars):
    done = on_a_terminal("info", str(gapped_store), columns=columns)
    assert done.returncode == 0, done.stderr
    room = columns - 20 - 3 - 2
    assert _chart(done.stdout) == ["timeline: messages per 20s (UTC)"] + [
        f"{start} {'█' * bar}{' ' * (room - bar)} {count:>3}" for start, bar, count in zip(STARTS, bars, COUNTS,
                                                                                            strict=True)]
    assert all(len(line) == columns for line in _chart(done.stdout)[1:])


def test_info_with_no_chart_draws_no_timeline(gapped_store):
    done = on_a_terminal("info", str(gapped_store), "--no-chart", columns=100)
    assert done.returncode == 0, done.stderr
    assert "timeline" not in done.stdout and "█" not in done.stdout
    assert "topics (as their consumers see them)" in done.stdout


def test_info_piped_draws_no_timeline(gapped_store):
    done = run("info", str(gapped_store))
    assert done.returncode == 0, done.stderr
    assert "timeline" not in done.stdout and "█" not in done.stdout


def test_a_chart_of_more_than_24_buckets_merges_neighbours_and_an_empty_timeline_draws_nothing():
    timeline = {"messages": [1] * 50, "edgesMs": [60_000 * i for i in range(51)], "bucketMs": 60_000}
    lines = chart_lines(timeline, 40)
    assert lines[0] == "timeline: messages per 3m 0s (UTC)"
    assert lines[1:] == [f"1970-01-01T00:{3 * i:02d}Z {'█' * 20} 3" for i in range(16)] + [
        f"1970-01-01T00:48Z {'█' * 13}{' ' * 7} 2"]
    assert chart_lines({"messages": [], "edgesMs": [], "bucketMs": 0}, 80) == []
