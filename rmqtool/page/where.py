"""Where the bytes are: bytes per topic and per queue (what the consumers can read: between each queue's
min and max offset), as bars with their message counts."""

from __future__ import annotations

from rmqtool.page.bars import Bar, bars
from rmqtool.page.svg import human_bytes
from rmqtool.page.table import details


def by_topic(queues: list[dict]) -> list[dict]:
    """Per topic: its queues, messages and bytes summed, largest in bytes first."""
    out: dict[str, dict] = {}
    for q in queues:
        t = out.setdefault(q["topic"], {"topic": q["topic"], "queues": 0, "messages": 0, "bytes": 0})
        t["queues"] += 1
        t["messages"] += q["messages"]
        t["bytes"] += q["bytes"]
    return sorted(out.values(), key=lambda t: (-t["bytes"], t["topic"]))


def topic_bytes(queues: list[dict]) -> str:
    topics = by_topic(queues)
    chart = bars("bytes-topic", [Bar(t["topic"], t["bytes"], data={"messages": t["messages"]}) for t in topics],
                 human_bytes)
    return chart + details("bytes-topic", ["topic", "queues", "messages", "bytes"],
                           [[t["topic"], t["queues"], t["messages"], t["bytes"]] for t in topics])


def queue_bytes(queues: list[dict]) -> str:
    rows = sorted(queues, key=lambda q: (-q["bytes"], q["topic"], q["queueId"]))
    chart = bars("bytes-queue", [Bar(f"{q['topic']} / {q['queueId']}", q["bytes"],
                                     data={"topic": q["topic"], "queue": q["queueId"], "messages": q["messages"]})
                                 for q in rows], human_bytes)
    return chart + details("bytes-queue", ["topic", "queue", "min offset", "max offset", "messages", "bytes"],
                           [[q["topic"], q["queueId"], q["minOffset"], q["maxOffset"], q["messages"], q["bytes"]]
                            for q in rows])
