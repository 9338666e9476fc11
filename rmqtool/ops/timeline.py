"""The store's timeline: messages and bytes per time bucket, per topic, as the consumers see them (the
messages between each queue's min and max offset), found from the consume queues without a log scan.
Only the records the log holds are counted: an entry whose record lies in a missing or truncated segment,
or past the log's end, is counted under `uncounted`, with the stretches of the log it points into.

Buckets: a round unit (1 s, 10 s, 1 min, 5 min, 15 min, 1 h, 6 h, 1 day, then whole days), the smallest
that covers the span in at most `buckets` (60 unless given) buckets, edges aligned to the unit in UTC.
Bucket i holds the messages stored at edgesMs[i] <= storeTimestamp < edgesMs[i + 1].
"""

from __future__ import annotations

from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.structures.consumequeue.queues import MapCache
from rmqtool.structures.consumequeue.timeline import QueueCounts, queue_edges

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
    return {"startMs": 0, "endMs": 0, "bucketMs": 0, "edgesMs": [], "messages": [], "bytes": [], "topics": [],
            "uncounted": {"messages": 0, "bytes": 0, "ranges": []}}


def log_gaps(reader: StoreReader, log_start: int, log_end: int) -> list[tuple[int, int | None]]:
    """The stretches [from, to) of the log between its start and end that no segment file holds (a missing
    segment, the tail a truncated one lost), then (end, None): past the log's end."""
    gaps: list[tuple[int, int | None]] = []
    at = log_start
    for seg in reader.segments:
        if seg.start > at and at < log_end:
            gaps.append((at, min(seg.start, log_end)))
        at = max(at, seg.end)
    if at < log_end:
        gaps.append((at, log_end))
    return [*gaps, (log_end, None)]


def _uncounted(counts: list[QueueCounts], gaps: list[tuple[int, int | None]]) -> dict:
    """The entries whose records the log does not hold: how many, their sizes, and per stretch of the log."""
    import numpy as np

    offsets = np.concatenate([o for c in counts for o in c.unheld] or [np.zeros(0, dtype=np.int64)])
    sizes = np.concatenate([z for c in counts for z in c.unheld_sizes] or [np.zeros(0, dtype=np.int64)])
    ranges = []
    if len(offsets):
        ends = np.asarray([g[1] if g[1] is not None else np.iinfo(np.int64).max for g in gaps], dtype=np.int64)
        which = np.minimum(np.searchsorted(ends, offsets, side="right"), len(gaps) - 1)  # the first gap ending after
        for k, (low, high) in enumerate(gaps):
            here = which == k
            if here.any():
                ranges.append({"from": low, "to": high, "messages": int(here.sum()), "bytes": int(sizes[here].sum())})
    return {"messages": len(offsets), "bytes": int(sizes.sum()), "ranges": ranges}


def store_timeline(reader: StoreReader, topics: list[dict], buckets: int | None = None,
                   queue_rows: list[dict] | None = None, log: dict | None = None) -> dict:
    """The timeline of the topics as `info` sums them up (`consumeQueues.topics`: each queue's min and max
    offset, each topic's first and last store time), counting the records the log (`info`'s commitlog section:
    firstOffset, endOffset) holds. Reads each queue's entries once, one file at a time, and about 20 store
    times per edge per queue file. `queue_rows`, when given, gains each queue's topic, queueId, minOffset,
    maxOffset, messages and bytes (the entries' sizes between min and max), and records and recordBytes (those
    the log holds)."""
    import numpy as np

    log = log or {}
    log_start, log_end = log.get("firstOffset", 0), log.get("endOffset", 0)
    firsts = [t["firstStoreTimestamp"] for t in topics if t["messages"] and t["firstStoreTimestamp"] is not None]
    lasts = [t["lastStoreTimestamp"] for t in topics if t["messages"] and t["lastStoreTimestamp"] is not None]
    last = max(max(lasts), 0) if firsts and lasts else 0
    edges = bucket_edges(max(min(firsts), 0), last, buckets) if firsts and lasts else []
    if not any(t["messages"] for t in topics) and queue_rows is None:
        return empty_timeline()
    edge_array = np.asarray(edges, dtype=np.int64)
    series = []
    counted: list[QueueCounts] = []
    maps = MapCache()
    try:
        for t in topics:
            count = np.zeros(len(edges), dtype=np.int64)
            nbytes = np.zeros(len(edges), dtype=np.int64)
            for q in t["queues"]:
                low, high = q["minOffset"], q["maxOffset"]
                c = queue_edges(reader, maps, t["topic"], q["queueId"], low, high, edge_array, log_start, log_end) \
                    if high > low else QueueCounts(np.zeros(len(edges), dtype=np.int64),
                                                   np.zeros(len(edges), dtype=np.int64))
                count += c.before
                nbytes += c.bytes_before
                counted.append(c)
                if queue_rows is not None:
                    queue_rows.append({"topic": t["topic"], "queueId": q["queueId"], "minOffset": low,
                                       "maxOffset": high, "messages": max(high - low, 0), "bytes": c.entry_bytes,
                                       "records": c.records, "recordBytes": c.record_bytes})
            series.append({"topic": t["topic"], "messages": np.diff(count).tolist(),
                           "bytes": np.diff(nbytes).tolist()})
    finally:
        maps.close()
    uncounted = _uncounted(counted, log_gaps(reader, log_start, log_end))
    if not edges:
        return {**empty_timeline(), "uncounted": uncounted}
    series.sort(key=lambda s: (-sum(s["messages"]), s["topic"]))
    n = len(edges) - 1
    return {"startMs": edges[0], "endMs": last, "bucketMs": edges[1] - edges[0], "edgesMs": edges,
            "messages": [sum(s["messages"][i] for s in series) for i in range(n)],
            "bytes": [sum(s["bytes"][i] for s in series) for i in range(n)],
            "topics": series, "uncounted": uncounted}
