"""The consume queues' `info` section: their form, file size and every queue's offset range, each topic
summed up as its consumers see it (the messages between its queues' min and max offsets, their bytes and
the first and last store time among them: two records read per queue).

`view` is the store being read: `queues` (a `QueueStore`), `segment_for(offset)` and `paths`
(`consumequeue`, `queue_dir(topic, queue_id)`).
"""

from __future__ import annotations

from collections import Counter

from rmqtool.errors import RmqError
from rmqtool.files.segments import list_segments
from rmqtool.structures.commitlog import message
from rmqtool.structures.consumequeue.queues import MapCache
from rmqtool.structures.consumequeue.rocksdb import RocksQueues
from rmqtool.structures.view import StoreView


def section(view: StoreView) -> dict:
    store = view.queues
    out: dict = {"form": store.kind, "location": str(view.paths.consumequeue)}
    topics = []
    sizes: Counter[int] = Counter()
    table = store.offset_table() if isinstance(store, RocksQueues) else None
    maps = MapCache()
    try:
        for topic in store.topics():
            rows = []
            summary = _TopicSummary()
            for qid in store.queue_ids(topic):
                low, high = store.bounds(topic, qid)
                rows.append({"queueId": qid, "minOffset": low, "maxOffset": high})
                summary.add(view, maps, topic, qid, low, high)
                if table is not None:
                    rows[-1]["offsetTable"] = {kind: {"queueOffset": b.queue_offset,
                                                      "commitLogOffset": b.commit_log_offset}
                                               for kind, b in sorted(table.get((topic, qid), {}).items())}
                if store.kind == "file":
                    sizes.update(s.size for s in list_segments(view.paths.queue_dir(topic, qid)))
            topics.append({"topic": topic, **summary.to_json(), "queues": rows})
    finally:
        maps.close()
    if sizes:
        out["fileSize"] = sizes.most_common(1)[0][0]
    if table is not None and store.checkpoint_offset is not None:
        out["dispatchedPhyOffset"] = store.checkpoint_offset  # the table's CHECKPOINT_TOPIC row
    out["queueCount"] = sum(len(t["queues"]) for t in topics)
    out["topics"] = topics
    return out


def _time_at(view: StoreView, maps: MapCache, topic: str, qid: int, queue_offset: int) -> int | None:
    """The store time of the message a queue entry points at; None when the entry or record is unreadable."""
    entry = view.queues.entry(topic, qid, queue_offset)
    seg = view.segment_for(entry[0]) if entry is not None else None
    if seg is None:
        return None
    try:
        return message.store_timestamp_at(maps.get(seg.path), entry[0] - seg.start)
    except RmqError:
        return None


class _TopicSummary:
    """A topic as its consumers see it: the messages its queues hold (between each queue's min and max
    offset), their bytes (the entries' sizes) and the first and last store time among them."""

    def __init__(self) -> None:
        self.messages = self.bytes = 0
        self.first: int | None = None
        self.last: int | None = None

    def add(self, view: StoreView, maps: MapCache, topic: str, qid: int, low: int, high: int) -> None:
        if high <= low:
            return
        self.messages += high - low
        for qoffs, entries in view.queues.read(topic, qid):
            keep = (qoffs >= low) & (qoffs < high)
            self.bytes += int(entries["size"][keep].sum())
        first, last = _time_at(view, maps, topic, qid, low), _time_at(view, maps, topic, qid, high - 1)
        if first is not None:
            self.first = first if self.first is None else min(self.first, first)
        if last is not None:
            self.last = last if self.last is None else max(self.last, last)

    def to_json(self) -> dict:
        return {"messages": self.messages, "bytes": self.bytes, "firstStoreTimestamp": self.first,
                "lastStoreTimestamp": self.last}
