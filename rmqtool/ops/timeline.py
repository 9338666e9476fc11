"""The store's timeline: messages and bytes per time bucket, per topic, as the consumers see them (the
messages between each queue's min and max offset), found from the consume queues without a log scan.

Buckets: a round unit (1 s, 10 s, 1 min, 5 min, 15 min, 1 h, 6 h, 1 day, then whole days), the smallest
that covers the span in at most `buckets` (60 unless given) buckets, edges aligned to the unit in UTC.
Bucket i holds the messages stored at edgesMs[i] <= storeTimestamp < edgesMs[i + 1].
"""

from __future__ import annotations

from typing import Any

from rmqtool.errors import RmqError
from rmqtool.structures.consumequeue.queues import MapCache
from rmqtool.structures.consumequeue.timeline import queue_edges

DEFAULT_BUCKETS = 60
_SECOND = 1000
_DAY = 86_400 * _SECOND
UNITS_MS = (_SECOND, 10 * _SECOND, 60 * _SECOND, 300 * _SECOND, 900 * _SECOND, 3600 * _SECOND, 6 * 3600 * _SECOND,
            _DAY)


def bucket_edges(first_ms: int, last_ms: int, buckets: int | None = None) -> list[int]:
    """The edges of the buckets that cover first_ms .. last_ms (both stored times, inclusive)."""
    target = DEFAULT_BUCKETS if buckets is None else buckets
    if target < 1:
        raise RmqError(f"buckets must be at least 1, not {target}")
    last_ms = max(last_ms, first_ms)

    def count(unit: int) -> int:
        return last_ms // unit - first_ms // unit + 1

    unit = next((u for u in UNITS_MS if count(u) <= target), None)
    if unit is None:  # whole days, as few as make the count fit
        days = -(-(last_ms // _DAY - first_ms // _DAY + 1) // target)
        unit = days * _DAY
        while count(unit) > target:
            unit += _DAY
    start = first_ms // unit * unit
    return [start + i * unit for i in range(count(unit) + 1)]


def empty_timeline() -> dict:
    return {"startMs": 0, "endMs": 0, "bucketMs": 0, "edgesMs": [], "messages": [], "bytes": [], "topics": []}


def store_timeline(reader: Any, topics: list[dict], buckets: int | None = None,
                   queue_rows: list[dict] | None = None) -> dict:
    """The timeline of the topics as `info` sums them up (`consumeQueues.topics`: each queue's min and max
    offset, each topic's first and last store time). Reads each queue's entries once, one file at a time,
    and about 20 store times per edge per queue file. `queue_rows`, when given, gains each queue's topic,
    queueId, minOffset, maxOffset, messages and bytes (the entries' sizes between min and max)."""
    import numpy as np


    firsts = [t["firstStoreTimestamp"] for t in topics if t["messages"] and t["firstStoreTimestamp"] is not None]
    lasts = [t["lastStoreTimestamp"] for t in topics if t["messages"] and t["lastStoreTimestamp"] is not None]
    last = max(max(lasts), 0) if firsts and lasts else 0
    edges = bucket_edges(max(min(firsts), 0), last, buckets) if firsts and lasts else []
    if not edges and queue_rows is None:
        return empty_timeline()
    edge_array = np.asarray(edges, dtype=np.int64)
    series = []
    maps = MapCache()
    try:
        for t in topics:
            count = np.zeros(len(edges), dtype=np.int64)
            nbytes = np.zeros(len(edges), dtype=np.int64)
            for q in t["queues"]:
                low, high = q["minOffset"], q["maxOffset"]
                c, b, total = queue_edges(reader, maps, t["topic"], q["queueId"], low, high, edge_array) \
                    if high > low else (0, 0, 0)
                count += c
                nbytes += b
                if queue_rows is not None:
                    queue_rows.append({"topic": t["topic"], "queueId": q["queueId"], "minOffset": low,
                                       "maxOffset": high, "messages": max(high - low, 0), "bytes": total})
            series.append({"topic": t["topic"], "messages": np.diff(count).tolist(),
                           "bytes": np.diff(nbytes).tolist()})
    finally:
        maps.close()
    if not edges:
        return empty_timeline()
    series.sort(key=lambda s: (-sum(s["messages"]), s["topic"]))
    n = len(edges) - 1
    return {"startMs": edges[0], "endMs": last, "bucketMs": edges[1] - edges[0], "edgesMs": edges,
            "messages": [sum(s["messages"][i] for s in series) for i in range(n)],
            "bytes": [sum(s["bytes"][i] for s in series) for i in range(n)], "topics": series}
