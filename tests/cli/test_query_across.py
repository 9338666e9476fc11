"""`query --time` without `--queue` answers for every queue of the topic, and `query --key`/`--unique-key` without
`--topic` searches every topic (issue 42): checked on golden/basic, written by the 4.9.7 broker, against what its
expected.json records (each message's queue offset, physical offset and store time; the broker's key queries)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import run, writable_copy

T = 1795347794388  # 2026-11-22T11:43:14.388Z: a probe of golden/basic's times.tsv
# queue -> (queue offset, phy offset) of OrderTopic's first message stored at or after T, read off expected.json
AT_T = {0: (96, 353083), 1: (18, 384869), 2: (16, 380480), 3: (22, 389520)}
PAST = 1795347795661  # OrderTopic/1's last message is older: that queue answers its max offset, 66, and no message


@pytest.fixture(scope="module")
def golden(golden_basic: Path) -> tuple[Path, Path]:
    return golden_basic / "store", golden_basic / "broker.conf"


def _first_at_or_after(expected: dict, topic: str, queue_id: int, t: int) -> dict | None:
    rows = sorted((m for m in expected["messages"] if m["topic"] == topic and m["queueId"] == queue_id),
                  key=lambda m: m["queueOffset"])
    return next((m for m in rows if m["storeTimestamp"] >= t), None)


def test_time_without_queue_was_refused_and_now_answers_every_queue(golden, golden_expected):
    store, conf = golden
    out = run("query", store, "--config", conf, "--topic", "OrderTopic", "--time", T, "--time-unit", "ms", "--jsonl")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["queueId"], r["queueOffset"], r["commitLogOffset"]) for r in rows] == [
        (q, *AT_T[q]) for q in range(4)]
    by_offset = {m["commitLogOffset"]: m for m in golden_expected["messages"]}
    for r in rows:
        m = by_offset[r["commitLogOffset"]]
        assert (r["storeTimestamp"], r["msgId"], r["queueOffset"]) == (m["storeTimestamp"], m["msgId"],
                                                                       m["queueOffset"])
        max_offset = golden_expected["maxOffsetInQueue"][f"OrderTopic/{r['queueId']}"]
        assert (r["minOffset"], r["maxOffset"]) == (0, max_offset)


@pytest.mark.parametrize("topic", ["OrderTopic", "PaymentTopic", "AuditLogTopic"])
def test_every_probe_of_times_tsv_answers_each_queue_with_its_first_message_at_or_after(golden, golden_expected, topic):
    """For each time the broker was probed with, each queue's row is the first message stored at or after it
    (the queue's max offset, no message, when there is none), as the golden check computes the truth."""
    store, conf = golden
    for t in sorted({p["timestamp"] for p in golden_expected["offsetInQueueByTime"]}):
        out = run("query", store, "--config", conf, "--topic", topic, "--time", t, "--time-unit", "ms", "--json")
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert (doc["topic"], doc["timestamp"], [r["queueId"] for r in doc["queues"]]) == (topic, t, [0, 1, 2, 3])
        for r in doc["queues"]:
            want = _first_at_or_after(golden_expected, topic, r["queueId"], t)
            if want is None:
                assert r["queueOffset"] == r["maxOffset"] and "commitLogOffset" not in r and "msgId" not in r
            else:
                assert (r["queueOffset"], r["commitLogOffset"], r["msgId"]) == (
                    want["queueOffset"], want["commitLogOffset"], want["msgId"])


def test_time_without_queue_shows_a_queue_past_its_end_as_none(golden):
    store, conf = golden
    out = run("query", store, "--config", conf, "--topic", "OrderTopic", "--time", PAST, "--time-unit", "ms")
    assert out.returncode == 0, out.stderr
    lines = [" ".join(line.strip("│ ").split()) for line in out.stdout.splitlines() if line.startswith("│")]
    assert lines == [
        "0 │ 289 │ 0..290 │ 1158078 │ 2026-11-22T11:43:15.661Z │ C633640700002A9F000000000011ABBE",
        "1 │ 66 (past the end) │ 0..66 │ - │ none at or after 2026-11-22T11:43:15.661Z │ -",
        "2 │ 73 │ 0..74 │ 1162430 │ 2026-11-22T11:43:15.669Z │ C633640700002A9F000000000011BCBE",
        "3 │ 68 │ 0..70 │ 1159716 │ 2026-11-22T11:43:15.664Z │ C633640700002A9F000000000011B224"]


def test_time_with_queue_still_answers_that_queue_alone(golden):
    store, conf = golden
    out = run("query", store, "--config", conf, "--topic", "OrderTopic", "--queue", 0, "--time", T, "--time-unit",
              "ms", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"topic": "OrderTopic", "queueId": 0, "timestamp": T, "queueOffset": 96,
                                      "minOffset": 0, "maxOffset": 290, "commitLogOffset": 353083,
                                      "storeTimestamp": T, "msgId": "C633640700002A9F000000000005633B"}


def test_time_for_a_topic_the_store_lacks_is_not_found(golden):
    store, conf = golden
    out = run("query", store, "--config", conf, "--topic", "NoSuchTopic", "--time", T, "--time-unit", "ms")
    assert (out.returncode, out.stdout) == (3, "")
    assert out.stderr == ("rmqtool: not found: the store holds no queue of topic NoSuchTopic (its topics: "
                          "AuditLogTopic, OrderTopic, PaymentTopic)\n")


def _hits(out) -> list[tuple[str, int]]:
    assert out.returncode == 0, out.stderr
    return [(m["topic"], m["commitLogOffset"]) for m in json.loads(out.stdout)["messages"]]


def test_key_without_topic_was_refused_and_now_searches_every_topic(golden, golden_expected):
    """Each key the broker was queried with: the hits of every topic, and under the topic the broker was asked
    about exactly the broker's own confirmed answer; order-1 is a PaymentTopic key only (AuditLogTopic: none)."""
    store, conf = golden
    by_offset = {m["commitLogOffset"]: m for m in golden_expected["messages"]}
    for q in golden_expected["queries"]:
        unique = q["key"].startswith("C0000201")
        out = run("query", store, "--config", conf, "--unique-key" if unique else "--key", q["key"], "--json")
        hits = _hits(out)
        assert "scanned" not in out.stderr
        assert [o for t, o in hits if t == q["topic"]] == sorted(
            o for o in q["phyOffsets"] if by_offset[o]["topic"] == q["topic"])
        assert all(by_offset[o]["topic"] == t for t, o in hits)
    out = run("query", store, "--config", conf, "--key", "order-1", "--json")
    assert _hits(out) == [("PaymentTopic", 518)]


def test_unique_key_without_topic_names_the_topic_of_its_hit(golden):
    store, conf = golden
    out = run("query", store, "--config", conf, "--unique-key", "C000020112340BADF00D000F42730003")
    assert out.returncode == 0, out.stderr
    card = [" ".join(line.strip("│ ").split()) for line in out.stdout.splitlines()]
    assert "topic │ OrderTopic" in card and "commitLogOffset │ 1056" in card


def test_key_without_topic_and_no_index_files_scans_and_says_why(golden, tmp_path):
    store = writable_copy(golden[0], tmp_path / "store")
    shutil.rmtree(store / "index")
    (store / "index").mkdir()
    out = run("query", store, "--config", golden[1], "--key", "order-1", "--json")
    assert _hits(out) == [("PaymentTopic", 518)]
    assert out.stderr == f"scanned the commitlog instead of the index: {store} has no index files\n"


def test_key_without_topic_whose_index_lookup_is_cut_at_max_scans_and_says_why(golden, golden_expected):
    """shared-3 has 29 OrderTopic hits: with --max 40 each topic's lookup fits and the index answers; with
    --max 20 OrderTopic's is cut, the commitlog is scanned, and the scan's first 20 hits come back."""
    store, conf = golden
    carried = sorted(m["commitLogOffset"] for m in golden_expected["messages"]
                     if "shared-3" in m["properties"].get("KEYS", "").split(" "))
    whole = _hits(run("query", store, "--config", conf, "--key", "shared-3", "--max", 40, "--json"))
    assert [o for _t, o in whole] == carried and len(carried) == 71
    out = run("query", store, "--config", conf, "--key", "shared-3", "--max", 20, "--json")
    assert [o for _t, o in _hits(out)] == carried[:20]
    assert out.stderr == ("scanned the commitlog instead of the index: a topic's index lookup stopped at --max 20 raw "
                          "hits, which other keys' hash collisions may fill\n"
                          "stopped at --max 20 hits: more messages may carry 'shared-3' (raise --max)\n")


def test_key_without_topic_also_looks_under_the_topics_of_topics_json(golden, tmp_path):
    """OrderTopic's consume queues gone: only config/topics.json still names it, and its index keys are found."""
    store = writable_copy(golden[0], tmp_path / "store")
    shutil.rmtree(store / "consumequeue" / "OrderTopic")
    key = ["--unique-key", "C000020112340BADF00D000F42730003", "--json"]
    assert _hits(run("query", store, "--config", golden[1], *key)) == []
    (store / "config" / "topics.json").write_text(json.dumps({"topicConfigTable": {"OrderTopic": {
        "topicName": "OrderTopic", "readQueueNums": 4, "writeQueueNums": 4}}}))
    assert _hits(run("query", store, "--config", golden[1], *key)) == [("OrderTopic", 1056)]


def test_key_without_topic_found_nowhere_says_which_topics_were_searched(golden):
    store, conf = golden
    out = run("query", store, "--config", conf, "--key", "no-such-key", "--json")
    assert _hits(out) == []
    assert out.stderr == ("0 messages: no message of any topic carries key 'no-such-key' (the index searched under "
                          "AuditLogTopic, OrderTopic, PaymentTopic)\n")
    out = run("query", store, "--config", conf, "--key", "order-1", "--begin", "2026-11-22T11:43:14Z", "--json")
    assert _hits(out) == []
    assert out.stderr == ("0 messages: 1 message(s) of the store carry key 'order-1', stored 2026-11-22T11:43:13.736Z "
                          ".. 2026-11-22T11:43:13.736Z: none between --begin 2026-11-22T11:43:14.000Z and the end of "
                          "the store\n")
