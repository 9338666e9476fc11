"""Consumers read from a store the real broker wrote, with offset files written the broker's way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import CONSUMER_OFFSETS, run, writable_copy
from lockholder import lock_held_elsewhere

from rmqtool.engine.reader import open_reader
from rmqtool.errors import NotFound, RmqError
from rmqtool.ops.consumers import (
    BEHIND_MIN,
    NO_OFFSET,
    NO_QUEUE,
    OK,
    PAST_MAX,
    Consumption,
    consumer_lag,
)
from rmqtool.ops.offset_admin import plan_reset, reset_offsets
from rmqtool.ops.query import StoreQuery
from rmqtool.structures.config import fastjson, offsets

BROKER_OFFSETS = CONSUMER_OFFSETS  # what a 4.9.7 broker persists (cli_helpers)


@pytest.fixture
def store(golden_basic: Path, tmp_path: Path) -> Path:
    dst = writable_copy(golden_basic / "store", tmp_path / "store")
    (dst / "config" / "consumerOffset.json").write_text(BROKER_OFFSETS)
    return dst


def _messages(expected: dict, topic: str, qid: int) -> list[dict]:
    return sorted((m for m in expected["messages"] if m["topic"] == topic and m["queueId"] == qid),
                  key=lambda m: m["queueOffset"])


def _rows(store: Path, **kw) -> dict[tuple[str, str, int], object]:
    return {(q.group, q.topic, q.queue_id): q for g in consumer_lag(open_reader(store), **kw) for q in g.queues}


def test_lag_is_the_messages_after_the_committed_offset_and_their_store_time_span(store, golden_expected):
    rows = _rows(store)
    q0 = _messages(golden_expected, "OrderTopic", 0)
    row = rows[("billing", "OrderTopic", 0)]
    assert (row.committed, row.min_offset, row.max_offset, row.state) == (250, 0, len(q0), OK)
    assert row.lag == len(q0) - 250 == 40
    assert row.lag_ms == q0[-1]["storeTimestamp"] - q0[250]["storeTimestamp"]
    q1 = _messages(golden_expected, "PaymentTopic", 1)
    assert rows[("audit", "PaymentTopic", 1)].lag == len(q1)
    assert rows[("audit", "PaymentTopic", 1)].lag_ms == q1[-1]["storeTimestamp"] - q1[0]["storeTimestamp"]
    caught_up = rows[("billing", "OrderTopic", 1)]
    assert (caught_up.lag, caught_up.lag_ms, caught_up.state) == (0, 0, OK)


def test_an_offset_past_the_queue_max_is_flagged_not_counted(store):
    row = _rows(store)[("billing", "OrderTopic", 3)]
    assert (row.committed, row.max_offset, row.lag, row.state) == (80, 70, 0, PAST_MAX)


def test_a_group_on_a_topic_the_store_no_longer_has_is_flagged(store):
    row = _rows(store)[("billing", "GoneTopic", 0)]
    assert (row.state, row.min_offset, row.max_offset, row.lag) == (NO_QUEUE, None, None, None)


def test_queues_without_a_committed_offset_are_listed_as_such(store):
    rows = _rows(store, group="audit")
    assert sorted(k[2] for k in rows) == [0, 1, 2, 3]
    assert rows[("audit", "PaymentTopic", 2)].state == NO_OFFSET and rows[("audit", "PaymentTopic", 2)].lag is None


def test_groups_and_queues_are_sorted_most_behind_first(store):
    groups = consumer_lag(open_reader(store))
    assert [g.group for g in groups] == ["audit", "billing"]  # 129 behind, then 40 + 64
    assert [g.lag for g in groups] == [129, 104]
    assert [q.lag for q in groups[1].queues][:2] == [64, 40]


def test_an_offset_below_the_queues_min_counts_the_deleted_messages_as_missed(store, golden_expected):
    # the log's first segment is gone (cleaned): queue entries pointing into it are no longer served
    first = sorted((store / "commitlog").iterdir())[0]
    log_start = int(sorted((store / "commitlog").iterdir())[1].name)
    first.unlink()
    (store / "config" / "consumerOffset.json").write_text('{"offsetTable":{"OrderTopic@late":{0:0}}}')
    q0 = _messages(golden_expected, "OrderTopic", 0)
    new_min = next(m["queueOffset"] for m in q0 if m["commitLogOffset"] >= log_start)
    assert new_min > 0
    row = _rows(store)[("late", "OrderTopic", 0)]
    assert (row.state, row.min_offset, row.missed, row.lag) == (BEHIND_MIN, new_min, new_min, len(q0) - new_min)


def test_an_empty_offset_table_lists_no_groups(store):
    (store / "config" / "consumerOffset.json").write_text('{\n\t"offsetTable":{}\n}')
    assert consumer_lag(open_reader(store)) == []


def test_an_unknown_group_is_not_found_and_names_the_known_ones(store):
    with pytest.raises(NotFound, match=r"group nobody has no committed offsets .*groups: audit, billing"):
        consumer_lag(open_reader(store), group="nobody")


def test_a_broken_offset_file_is_read_from_its_bak_as_the_broker_does(store):
    cfg = store / "config"
    (cfg / "consumerOffset.json.bak").write_text(BROKER_OFFSETS)
    (cfg / "consumerOffset.json").write_text('{"offsetTable":{"OrderTopic@billing":{0:')  # a torn write
    (cfg / "consumerOffset.json.tmp").write_text('{"offsetTable":{}}')  # an interrupted persist: ignored
    assert _rows(store)[("billing", "OrderTopic", 0)].committed == 250


def test_a_broken_offset_file_without_a_bak_is_one_clear_error(store):
    (store / "config" / "consumerOffset.json").write_text('{"offsetTable":{"OrderTopic@billing":{0:')
    with pytest.raises(RmqError, match=r"consumerOffset\.json: not a config document"):
        consumer_lag(open_reader(store))


def test_consumed_is_exact_at_the_committed_offsets_boundary(store):
    reader = open_reader(store)
    query = StoreQuery(reader)
    seen = Consumption(store)
    at_249, at_250 = query.by_queue_offset("OrderTopic", 0, 249, count=2)
    assert seen.of(at_249.message) == {"groups": [{"group": "billing", "committedOffset": 250, "consumed": True}]}
    assert seen.of(at_250.message) == {"groups": [{"group": "billing", "committedOffset": 250, "consumed": False}]}
    other_queue = query.by_queue_offset("OrderTopic", 2, 9, count=2)
    assert [seen.of(h.message)["groups"][0]["consumed"] for h in other_queue] == [True, False]
    assert seen.of(query.by_queue_offset("AuditLogTopic", 0, 0)[0].message) is None  # no group on it
    query.close()


def test_reset_by_time_equals_query_time_on_every_queue(store, golden_expected):
    times = sorted(m["storeTimestamp"] for m in golden_expected["messages"] if m["topic"] == "OrderTopic")
    when = times[len(times) // 3] + 1
    plan = reset_offsets(open_reader(store), "billing", "OrderTopic", to_time=when)
    for row in plan.rows:
        out = run("query", store, "--topic", "OrderTopic", "--queue", row["queueId"], "--time", when, "--json")
        assert row["newOffset"] == json.loads(out.stdout)["queueOffset"]
        first_after = next((m["queueOffset"] for m in _messages(golden_expected, "OrderTopic", row["queueId"])
                            if m["storeTimestamp"] >= when), row["maxOffset"])
        assert row["newOffset"] == first_after
    back = offsets.load(store).of("OrderTopic", "billing")
    assert back.queues == {r["queueId"]: r["newOffset"] for r in plan.rows}


def test_reset_writes_the_file_as_the_broker_does_and_keeps_the_other_entries(store):
    reset_offsets(open_reader(store), "billing", "OrderTopic", to_offset=5)
    cfg = store / "config"
    assert (cfg / "consumerOffset.json.bak").read_text() == BROKER_OFFSETS
    assert not (cfg / "consumerOffset.json.tmp").exists()
    want = BROKER_OFFSETS.replace("{0:250,1:66,2:10,3:80", "{0:5,1:5,2:5,3:5")
    assert (cfg / "consumerOffset.json").read_text() == want


def test_reset_of_a_new_group_adds_its_entry(store):
    plan = reset_offsets(open_reader(store), "fresh", "PaymentTopic", earliest=True)
    doc = fastjson.loads((store / "config" / "consumerOffset.json").read_text())
    assert doc["offsetTable"]["PaymentTopic@fresh"] == {r["queueId"]: r["minOffset"] for r in plan.rows}
    assert [r["oldOffset"] for r in plan.rows] == [None] * 4


def test_reset_dry_run_changes_no_byte(store):
    before = (store / "config" / "consumerOffset.json").read_bytes()
    plan = reset_offsets(open_reader(store), "billing", "OrderTopic", latest=True, dry_run=True)
    assert [(r["oldOffset"], r["newOffset"]) for r in plan.rows] == [(250, 290), (66, 66), (10, 74), (80, 70)]
    assert (store / "config" / "consumerOffset.json").read_bytes() == before
    assert sorted(p.name for p in (store / "config").iterdir()) == ["consumerOffset.json", "delayOffset.json"]


def test_reset_is_refused_while_another_process_holds_the_lock(store):
    before = (store / "config" / "consumerOffset.json").read_bytes()
    with lock_held_elsewhere(store / "lock"), pytest.raises(RmqError, match=r"is locked by process \d+ "):
        reset_offsets(open_reader(store), "billing", "OrderTopic", earliest=True)
    assert (store / "config" / "consumerOffset.json").read_bytes() == before
    assert not (store / "config" / "consumerOffset.json.bak").exists()


def test_reset_to_an_offset_outside_a_queue_is_refused_before_any_write(store):
    before = (store / "config" / "consumerOffset.json").read_bytes()
    with pytest.raises(RmqError, match=r"--to-offset 100 is outside queue OrderTopic/1 \(0..66\)"):
        reset_offsets(open_reader(store), "billing", "OrderTopic", to_offset=100)
    assert (store / "config" / "consumerOffset.json").read_bytes() == before


def test_reset_of_a_topic_the_store_lacks_is_refused(store):
    with pytest.raises(RmqError, match="topic GoneTopic has no consume queues"):
        plan_reset(open_reader(store), "billing", "GoneTopic", earliest=True)


def test_reset_keeps_queues_the_store_lacks_and_says_so(store):
    doc = fastjson.loads(BROKER_OFFSETS)
    doc["offsetTable"]["OrderTopic@billing"][7] = 3
    (store / "config" / "consumerOffset.json").write_text(fastjson.dumps(doc))
    plan = reset_offsets(open_reader(store), "billing", "OrderTopic", earliest=True)
    assert plan.kept == [7]
    assert offsets.load(store).of("OrderTopic", "billing").queues == {0: 0, 1: 0, 2: 0, 3: 0, 7: 3}


def test_a_subscribed_group_that_never_committed_is_named_as_such(store):
    (store / "config" / "subscriptionGroup.json").write_text(
        '{"subscriptionGroupTable":{"quiet":{"groupName":"quiet","consumeEnable":true}},'
        '"dataVersion":{"counter":1,"timestamp":1}}')
    with pytest.raises(NotFound, match=r"subscriptionGroup\.json has it: it never committed"):
        consumer_lag(open_reader(store), group="quiet")
