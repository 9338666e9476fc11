"""The timeline from the consume queues equals a count from a full decode, to the message; damaged store
times are clamped, never a crash, and every message is still counted."""

from __future__ import annotations

import bisect
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from cli_helpers import run
from conftest import GAP_BASE_MS
from damage import SEG, corrupt
from queued_offsets import queued_offsets

from rmqtool.errors import RmqError
from rmqtool.ops.info import store_info
from rmqtool.ops.timeline import bucket_edges
from rmqtool.structures.commitlog import message


def _decoded(store: Path) -> list[dict]:
    done = run("export", str(store))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _brute_force(store: Path, doc: dict) -> dict[str, tuple[list[int], list[int]]]:
    """Per topic, messages and bytes per bucket of every decoded record its queues' entries between min and max
    offset point at."""
    edges = doc["timeline"]["edgesMs"]
    held = queued_offsets(store, doc)
    counts: Counter[tuple[str, int]] = Counter()
    sizes: Counter[tuple[str, int]] = Counter()
    for row in _decoded(store):
        if row["commitLogOffset"] in held:
            b = bisect.bisect_right(edges, row["storeTimestamp"]) - 1
            counts[row["topic"], b] += 1
            sizes[row["topic"], b] += row["storeSize"]
    n = len(edges) - 1
    return {t: ([counts[t, i] for i in range(n)], [sizes[t, i] for i in range(n)]) for t, _ in counts}


def test_timeline_counts_equal_a_full_decode_per_bucket_and_topic(gapped_store):
    doc = store_info(gapped_store)
    timeline = doc["timeline"]
    assert timeline["bucketMs"] == 10_000
    assert timeline["startMs"] == GAP_BASE_MS
    assert timeline["endMs"] == GAP_BASE_MS + 137 * 419 + 300_000  # the last of 420 records
    assert timeline["edgesMs"] == [GAP_BASE_MS + 10_000 * i for i in range(len(timeline["edgesMs"]))]
    assert len(timeline["edgesMs"]) == 37
    expected = _brute_force(gapped_store, doc)
    assert {s["topic"]: (s["messages"], s["bytes"]) for s in timeline["topics"]} == expected
    assert timeline["messages"] == [sum(col) for col in zip(*(s["messages"] for s in timeline["topics"]), strict=True)]
    assert timeline["bytes"] == [sum(col) for col in zip(*(s["bytes"] for s in timeline["topics"]), strict=True)]
    # records 0..199 span 27.3 s: buckets 0..2; the 5 minutes without a message leave buckets 3..31 empty
    assert timeline["messages"] == [69, 69, 52] + [0] * 29 + [17, 71, 69, 53]
    assert sum(timeline["messages"]) == doc["messagesInQueues"] == 400
    totals = [sum(s["messages"]) for s in timeline["topics"]]
    assert totals == sorted(totals, reverse=True)


def test_timeline_of_the_fixture_store_counts_every_message_in_its_queues(fixture_store):
    doc = store_info(fixture_store)
    expected = _brute_force(fixture_store, doc)
    assert {s["topic"]: (s["messages"], s["bytes"]) for s in doc["timeline"]["topics"]} == expected
    assert doc["timeline"]["messages"] == [135, 137, 128]


@pytest.mark.parametrize("name", ["basic", "v5-rocksdb"])
def test_timeline_totals_of_a_golden_store_equal_its_messages_in_queues(name, golden_basic, golden_v5):
    root = {"basic": golden_basic, "v5-rocksdb": golden_v5}[name]
    doc = store_info(root / "store", root / "broker.conf")
    timeline = doc["timeline"]
    assert sum(timeline["messages"]) == doc["messagesInQueues"]
    per_topic = {t["topic"]: (t["messages"], t["bytes"]) for t in doc["consumeQueues"]["topics"]}
    assert {s["topic"]: (sum(s["messages"]), sum(s["bytes"])) for s in timeline["topics"]} == per_topic
    assert timeline["edgesMs"][0] <= min(t["firstStoreTimestamp"] for t in doc["consumeQueues"]["topics"]
                                         if t["messages"]) < timeline["edgesMs"][1]
    assert timeline["edgesMs"][-1] > timeline["endMs"]


def test_a_store_time_gone_backwards_in_a_queue_is_clamped_and_still_counted(gapped_store, tmp_path):
    root = tmp_path / "store"
    shutil.copytree(gapped_store, root)
    row = _decoded(root)[100]
    at = row["commitLogOffset"] + message.store_timestamp_offset(row["sysFlag"])
    corrupt(root, f"commitlog/{at // SEG * SEG:020d}", "zero", at % SEG, 8)  # stored at 1970-01-01
    doc = store_info(root)
    timeline = doc["timeline"]
    assert sum(timeline["messages"]) == 400
    assert all(m >= 0 for m in timeline["messages"]) and all(b >= 0 for b in timeline["bytes"])
    assert timeline["startMs"] == GAP_BASE_MS  # the queue's first and last record set the span


def test_an_empty_store_has_an_empty_timeline(tmp_path):
    (tmp_path / "none.jsonl").write_text("")
    done = run("import", str(tmp_path / "empty"), str(tmp_path / "none.jsonl"))
    assert done.returncode == 0, done.stderr
    assert store_info(tmp_path / "empty")["timeline"] == {
        "startMs": 0, "endMs": 0, "bucketMs": 0, "edgesMs": [], "messages": [], "bytes": [], "topics": [],
        "uncounted": {"messages": 0, "bytes": 0, "ranges": []}}


@pytest.mark.parametrize(("first", "last", "buckets", "unit", "count"), [
    (1_000, 1_000, None, 1_000, 1),
    (0, 59_999, None, 1_000, 60),
    (0, 60_000, None, 10_000, 7),
    (0, 3 * 3_600_000, None, 300_000, 37),
    (0, 3 * 3_600_000, 4, 3_600_000, 4),
    (0, 100 * 86_400_000, None, 2 * 86_400_000, 51),
])
def test_buckets_are_the_smallest_round_unit_that_fits(first, last, buckets, unit, count):
    edges = bucket_edges(first, last, buckets)
    assert (edges[1] - edges[0], len(edges) - 1) == (unit, count)
    assert edges[0] <= first and edges[-1] > last


def test_zero_buckets_are_refused():
    with pytest.raises(RmqError, match="buckets must be at least 1, not 0"):
        bucket_edges(0, 1, 0)
