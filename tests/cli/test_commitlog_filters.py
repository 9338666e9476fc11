"""`decode commitlog` and `export` select by queue, tag, key and store time beside the topic (issue 42): the
records kept are the ones the real broker read back from golden/basic (expected.json) that match every
filter; decode and export keep the same ones; a filter no record could pass is exit 2, a selection that keeps
nothing exit 3 naming the filter that left nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run

BEGIN_MS, END_MS = 1795347794000, 1795347794500  # half a second in the middle of golden/basic's store times


@pytest.fixture(scope="module")
def golden(golden_basic: Path) -> tuple[Path, list[dict]]:
    """golden/basic's store (read-only: these commands only read) and the messages the broker read back."""
    return golden_basic / "store", json.loads((golden_basic / "expected.json").read_text())["messages"]


def _broker_offsets(messages: list[dict], topic=None, queue=None, tag=None, key=None, begin=None, end=None):
    """The commitlog offsets of the broker's messages that match every filter given (KEYS split at spaces)."""
    def keeps(m: dict) -> bool:
        props = m["properties"]
        words = [w for w in props.get("KEYS", "").split(" ") if w]
        return ((topic is None or m["topic"] == topic) and (queue is None or m["queueId"] == queue)
                and (tag is None or props.get("TAGS") == tag)
                and (key is None or props.get("UNIQ_KEY") == key or key in words)
                and (begin is None or m["storeTimestamp"] >= begin) and (end is None or m["storeTimestamp"] <= end))
    return [m["commitLogOffset"] for m in messages if keeps(m)]


def _decoded(store: Path, *args: str) -> list[dict]:
    out = run("decode", "commitlog", store, "--jsonl", "--body", "none", *args)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_decode_commitlog_with_a_queue_filter_prints_only_that_queue_of_the_topic(golden):
    store, messages = golden
    rows = _decoded(store, "--topic", "OrderTopic", "--queue", "2")
    wanted = _broker_offsets(messages, topic="OrderTopic", queue=2)
    assert len(wanted) == 74 and [r["commitLogOffset"] for r in rows] == wanted
    assert {(r["topic"], r["queueId"]) for r in rows} == {("OrderTopic", 2)}
    assert [r["queueOffset"] for r in rows] == list(range(74))  # the queue whole, in order


def test_decode_commitlog_with_a_tag_filter_prints_only_messages_with_that_tags(golden):
    store, messages = golden
    rows = _decoded(store, "--tag", "🚀rocket", "--topic", "PaymentTopic")
    wanted = _broker_offsets(messages, topic="PaymentTopic", tag="🚀rocket")
    assert len(wanted) == 95 and [r["commitLogOffset"] for r in rows] == wanted
    assert {r["properties"]["TAGS"] for r in rows} == {"🚀rocket"}
    assert [r["commitLogOffset"] for r in _decoded(store, "--tag", "TagA")] == _broker_offsets(messages, tag="TagA")


def test_decode_commitlog_with_a_key_filter_matches_a_keys_word_or_the_uniq_key(golden):
    store, messages = golden
    middle_word = _decoded(store, "--key", "shared-2")  # the second word of "k-2 shared-2 中文键-2"
    assert len(middle_word) == 65
    assert [r["commitLogOffset"] for r in middle_word] == _broker_offsets(messages, key="shared-2")
    uniq = _decoded(store, "--key", "C000020112340BADF00D000F42950005", "--topic", "AuditLogTopic")
    assert [(r["commitLogOffset"], r["msgId"]) for r in uniq] == [(4383, "C633640700002A9F000000000000111F")]
    in_queue = _decoded(store, "--key", "中文键-4", "--topic", "OrderTopic", "--queue", "0")
    assert [r["commitLogOffset"] for r in in_queue] == _broker_offsets(messages, key="中文键-4", topic="OrderTopic",
                                                                       queue=0)
    assert in_queue


def test_decode_commitlog_with_a_time_window_reads_times_as_export_and_query_do(golden):
    store, messages = golden
    wanted = _broker_offsets(messages, topic="AuditLogTopic", begin=BEGIN_MS, end=END_MS)
    assert len(wanted) == 126
    iso = _decoded(store, "--topic", "AuditLogTopic", "--begin", "2026-11-22T11:43:14Z",
                   "--end", "2026-11-22T11:43:14.500Z")
    seconds = _decoded(store, "--topic", "AuditLogTopic", "--begin", "1795347794", "--end", "1795347795",
                       "--time-unit", "s")  # 1795347794000 .. 1795347795000 ms
    assert [r["commitLogOffset"] for r in iso] == wanted
    assert [r["commitLogOffset"] for r in seconds] == _broker_offsets(messages, topic="AuditLogTopic",
                                                                      begin=BEGIN_MS, end=BEGIN_MS + 1000)
    refused = run("decode", "commitlog", store, "--begin", "1795347794")
    assert refused.returncode == 2 and "reads as seconds" in refused.stderr and not refused.stdout


def test_decode_commitlog_count_and_phy_offset_count_the_selected_messages(golden):
    store, messages = golden
    tagged = _broker_offsets(messages, tag="TagC", queue=1)
    rows = _decoded(store, "--tag", "TagC", "--queue", "1", "--phy-offset", str(tagged[4]), "--count", "3")
    assert [r["commitLogOffset"] for r in rows] == tagged[4:7]


def test_decode_commitlog_follow_with_a_tag_filter_prints_the_tagged_messages_and_ends_at_count(golden):
    store, messages = golden
    out = run("decode", "commitlog", store, "--follow", "--phy-offset", "0", "--tag", "TagB", "--queue", "3",
              "--count", "4", "--jsonl", "--body", "none")
    assert out.returncode == 0, out.stderr
    assert [json.loads(line)["commitLogOffset"] for line in out.stdout.splitlines()] == \
        _broker_offsets(messages, tag="TagB", queue=3)[:4]


def test_export_with_the_filters_writes_the_records_decode_commitlog_prints(golden, tmp_path):
    store, messages = golden
    filters = ("--topic", "PaymentTopic", "--queue", "1", "--key", "shared-3", "--begin", "2026-11-22T11:43:13Z")
    out = tmp_path / "picked.jsonl"
    done = run("export", store, *filters, "--out", out)
    assert done.returncode == 0, done.stderr
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    decoded = [json.loads(line) for line in run("decode", "commitlog", store, *filters, "--jsonl").stdout.splitlines()]
    wanted = _broker_offsets(messages, topic="PaymentTopic", queue=1, key="shared-3", begin=1795347793000)
    assert wanted and [r["commitLogOffset"] for r in exported] == wanted
    assert exported == decoded  # the same rows, field for field (no compressed body in golden/basic)
    assert done.stderr == f"{len(wanted)} messages written to {out}\n"
    by_tag = run("export", store, "--tag", "标签", "--queue", "0")
    assert [json.loads(line)["commitLogOffset"] for line in by_tag.stdout.splitlines()] == \
        _broker_offsets(messages, tag="标签", queue=0)


@pytest.mark.parametrize("command", [("decode", "commitlog"), ("export",)])
@pytest.mark.parametrize(("args", "said"), [
    (("--queue", "-1"), "--queue': -1 is out of range (0..9223372036854775807)"),
    (("--tag", ""), "--tag '' names no tag"),
    (("--key", ""), "--key '' names no key"),
    (("--begin", "2026-11-22T11:43:15Z", "--end", "2026-11-22T11:43:14Z"), "is after --end"),
])
def test_a_filter_no_record_could_pass_is_refused_in_one_line(golden, tmp_path, command, args, said):
    store, _ = golden
    out = tmp_path / "x.jsonl"
    refused = run(*command, store, *args, *(("--out", out) if command == ("export",) else ()))
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.count("\n") == 1 and said in refused.stderr and "Traceback" not in refused.stderr
    assert not refused.stdout and not out.exists()


@pytest.mark.parametrize(("args", "why"), [
    (("--topic", "OrderTopic", "--queue", "9"), "none of the 500 records of topic OrderTopic is in queue 9"),
    (("--topic", "OrderTopic", "--tag", "TagZ"), "none of the 500 records of topic OrderTopic is tagged TagZ"),
    (("--topic", "AuditLogTopic", "--key", "order-7"),
     "none of the 500 records of topic AuditLogTopic carries the key order-7 (a KEYS word or the UNIQ_KEY)"),
    (("--queue", "3", "--begin", "2030-01-01"),
     "none of the 324 records in queue 3 was stored at or after 2030-01-01T00:00:00.000Z"),
])
def test_a_selection_that_keeps_nothing_exits_3_naming_the_filter_that_left_nothing(golden, tmp_path, args, why):
    store, _ = golden
    decoded = run("decode", "commitlog", store, "--jsonl", *args)
    assert (decoded.returncode, decoded.stdout, decoded.stderr) == (3, "", f"rmqtool: not found: {why}\n")
    out = tmp_path / "none.jsonl"
    exported = run("export", store, *args, "--out", out)
    assert (exported.returncode, exported.stderr) == (3, f"rmqtool: not found: {why}\n")
    assert not out.exists() and not Path(f"{out}.geometry.json").exists()


def test_decode_commitlog_without_a_filter_still_prints_every_queue_tag_and_key(golden):
    store, messages = golden
    rows = _decoded(store)
    assert [r["commitLogOffset"] for r in rows] == [m["commitLogOffset"] for m in messages]
