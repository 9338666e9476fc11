"""A store whose middle segment lost its tail (or is gone): `info` and `report` count the records the log holds,
and say how many queue entries point where it holds none, not messages counted from queue offsets."""

from __future__ import annotations

import bisect
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from cli_helpers import run, writable_copy
from damage import FIXTURE, SEG, corrupt, damaged_stores
from page_helpers import Elements
from queued_offsets import queued_offsets

from rmqtool.ops.info import store_info

CUT = 3000  # the middle segment keeps its first 3000 bytes


@pytest.fixture
def truncated(tmp_path: Path) -> Path:
    root = writable_copy(FIXTURE, tmp_path / "store")
    corrupt(root, f"commitlog/{SEG:020d}", "truncate", CUT)
    return root


def _held_per_bucket(store: Path, doc: dict) -> list[int]:
    """Per bucket, the decoded records some queue entry (between min and max offset) points at."""
    edges = doc["timeline"]["edgesMs"]
    wanted = queued_offsets(store, doc)
    done = run("export", store)  # exit 1: the cut record is a corrupt region it skips
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    found = Counter(bisect.bisect_right(edges, r["storeTimestamp"]) - 1 for r in rows if r["commitLogOffset"] in wanted)
    return [found[i] for i in range(len(edges) - 1)]


def test_the_timeline_of_a_truncated_middle_segment_counts_only_the_records_the_log_holds(truncated):
    doc = store_info(truncated)
    timeline = doc["timeline"]
    assert timeline["messages"] == _held_per_bucket(truncated, doc) == [135, 55, 43]
    assert timeline["uncounted"] == {"messages": 167, "bytes": 60509, "ranges": [
        {"from": SEG + CUT, "to": 2 * SEG, "messages": 167, "bytes": 60509}]}
    assert sum(timeline["bytes"]) + 60509 == sum(t["bytes"] for t in doc["consumeQueues"]["topics"])


def test_messages_in_queues_of_a_truncated_middle_segment_says_the_records_the_log_holds(truncated):
    doc = store_info(truncated)
    assert (doc["messagesInQueues"], doc["recordsInLog"]) == (400, 233)
    out = run("info", truncated)
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if "messages in queues" in line)
    assert re.sub(r"\s*│\s*", "|", row).strip("|") == (
        "messages in queues|400 entries; the log holds 233 of their records (167 point into 68536 .. 131072, "
        "which no segment holds)")


def test_the_report_of_a_truncated_middle_segment_counts_the_records_the_log_holds(truncated, tmp_path):
    page = tmp_path / "report.html"
    out = run("report", truncated, "--out", page)
    assert out.returncode == 0, out.stderr
    dom = Elements(page.read_text(encoding="utf-8"))
    buckets = dom.having("g", **{"class": "bucket"})
    assert [b["data-messages"] for b in buckets[:3]] == ["135", "55", "43"]
    assert [(d["data-uncounted"]) for d in dom.having("div", **{"class": "bad"})] == ["167"]
    assert [(li["data-from"], li["data-to"], li["data-messages"]) for li in dom.having("li") if "data-from" in li] \
        == [("68536", "131072", "167")]
    assert "400 entries, 233 records in the log" in "".join(dom.text)


def test_queue_entries_into_a_missing_segment_are_counted_apart_with_the_hole(tmp_path):
    root = damaged_stores(tmp_path, ["middle-missing"])["middle-missing"]
    doc = store_info(root)
    missing = doc["timeline"]["uncounted"]
    assert sum(doc["timeline"]["messages"]) + missing["messages"] == doc["messagesInQueues"] == 400
    assert doc["recordsInLog"] == sum(doc["timeline"]["messages"]) == 221
    assert [(r["from"], r["to"]) for r in missing["ranges"]] == [(SEG, 2 * SEG)]


def test_an_undamaged_store_counts_every_entry_and_nothing_apart(fixture_store):
    doc = store_info(fixture_store)
    assert doc["timeline"]["uncounted"] == {"messages": 0, "bytes": 0, "ranges": []}
    assert doc["recordsInLog"] == doc["messagesInQueues"] == sum(doc["timeline"]["messages"]) == 400
