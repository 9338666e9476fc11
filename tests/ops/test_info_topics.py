"""`info`'s per-topic summary agrees with a full decode of the log the broker wrote."""

from __future__ import annotations

from collections import defaultdict

from rmqtool.ops.info import store_info


def test_per_topic_messages_bytes_and_times_equal_a_full_decodes(golden_basic, golden_expected):
    want: dict[str, dict] = defaultdict(lambda: {"messages": 0, "bytes": 0, "times": []})
    for m in golden_expected["messages"]:
        if m.get("inConsumeQueue", True):
            t = want[m["topic"]]
            t["messages"] += 1
            t["bytes"] += m["storeSize"]
            t["times"].append(m["storeTimestamp"])
    doc = store_info(golden_basic / "store")
    got = {t["topic"]: t for t in doc["consumeQueues"]["topics"]}
    assert sorted(got) == sorted(want)
    for name, t in want.items():
        assert (got[name]["messages"], got[name]["bytes"]) == (t["messages"], t["bytes"])
        assert (got[name]["firstStoreTimestamp"], got[name]["lastStoreTimestamp"]) == (min(t["times"]),
                                                                                       max(t["times"]))
        assert len(got[name]["queues"]) == 4
