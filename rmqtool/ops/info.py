"""`info`: what an operator asks first about a store, gathered read-only and without a full scan.

The kind and its evidence, the commitlog's extent (first/last record and their store times),
the consume queues (form, file size, every queue's offset range), the index files, the
checkpoint against the data, and whether `abort` is present and a process holds `lock`.
Each topic is summed up as its consumers see it: the messages between its queues' min and max
offsets, their bytes (the entries' sizes) and the first and last store time among them.
Cost: the first and the last segment are scanned, the consume queues' entries (20 bytes a
message), two records per queue and each index header are read; nothing else.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from rmqtool.engine import journal
from rmqtool.engine.reader import StoreReader, open_root_reader
from rmqtool.errors import RmqError
from rmqtool.files.lock import lock_holder
from rmqtool.files.segments import list_segments
from rmqtool.files.swap import JOURNAL, staging_root
from rmqtool.ops.query import StoreQuery
from rmqtool.structures import REGISTRY, index
from rmqtool.structures.consumequeue.rocksdb import RocksQueues


def store_info(path: str | os.PathLike, config: str | os.PathLike | None = None) -> dict:
    reader = open_root_reader(path, config)
    try:
        kind = reader.store.kind
        doc: dict = {"store": str(reader.paths.root), **kind.to_json()}
        for structure in REGISTRY:  # the log first: the checkpoint is read against its newest record
            section = _SECTIONS.get(structure.name)
            if section is not None:
                key, summary = section
                value = summary(reader, doc)
                if value is not None:  # None: the store has none of the structure's files (5.x HA)
                    doc[key] = value
        doc["messagesInQueues"] = sum(q["maxOffset"] - q["minOffset"] for t in doc["consumeQueues"]["topics"]
                                      for q in t["queues"])
        doc["abortFile"] = reader.paths.abort.exists()
        doc["unfinishedSwap"] = (staging_root(reader.paths) / JOURNAL).exists()  # the next writer finishes it
        interrupted = journal.pending(reader.paths)  # the next writer rolls it back
        doc["interruptedWrite"] = None if interrupted is None else {
            "command": interrupted["command"], "pid": interrupted["pid"], "startedMs": interrupted["startedMs"],
            "commitlogEnd": interrupted["mark"]["commitlogEnd"]}
        doc["lockHeldBy"] = lock_holder(reader.paths)
        if kind.timer_store:
            doc["timerFiles"] = _timer(reader.paths.root)
        return doc
    finally:
        reader.queues.close()


def _commitlog(reader: StoreReader) -> dict:
    segs = reader.segments
    out: dict = {"directory": str(reader.paths.commitlog), "segments": len(segs), "segmentSize": reader.segment_size,
                 "holes": [_hole(low, high, reader.segment_size) for low, high in reader.holes()]}
    if not segs:
        return out
    first = _edge_record(reader, segs[0].start, last=False)
    last = None
    for seg in reversed(segs):
        last = _edge_record(reader, seg.start, last=True, until=seg.end)
        if last is not None:
            break
    if first is not None:
        out["firstOffset"], out["firstStoreTimestamp"] = first
    if last is not None:
        end, ts = last
        out["endOffset"], out["lastStoreTimestamp"] = end, ts
        if first is not None:
            out["dataBytes"] = end - first[0]
    return out


def _edge_record(reader: StoreReader, start: int, *, last: bool, until: int | None = None) -> tuple[int, int] | None:
    """(offset, storeTimestamp) of the first good record from `start` on, or (end offset,
    storeTimestamp) of the last good record of the segment at `start` (`last`)."""
    found = None
    for chunk in reader.scan(start, verify_crc=False, until=until):
        b = chunk.batch
        if b is None or not len(b):
            continue
        ts = b.cols["storeTimestamp"]
        if not last:
            return int(b.offsets[0]), int(ts[0])
        found = (int(b.offsets[-1] + b.cols["totalSize"][-1]), int(ts[-1]))
    return found


def _queues(reader: StoreReader) -> dict:
    store = reader.queues
    out: dict = {"form": store.kind, "location": str(reader.paths.consumequeue)}
    topics = []
    sizes: Counter[int] = Counter()
    table = store.offset_table() if isinstance(store, RocksQueues) else None
    times = StoreQuery(reader)
    for topic in store.topics():
        rows = []
        summary = _TopicSummary()
        for qid in store.queue_ids(topic):
            low, high = store.bounds(topic, qid)
            rows.append({"queueId": qid, "minOffset": low, "maxOffset": high})
            summary.add(reader, times, topic, qid, low, high)
            if table is not None:
                rows[-1]["offsetTable"] = {kind: {"queueOffset": b.queue_offset, "commitLogOffset": b.commit_log_offset}
                                           for kind, b in sorted(table.get((topic, qid), {}).items())}
            if store.kind == "file":
                sizes.update(s.size for s in list_segments(reader.paths.queue_dir(topic, qid)))
        topics.append({"topic": topic, **summary.to_json(), "queues": rows})
    times.maps.close()
    if sizes:
        out["fileSize"] = sizes.most_common(1)[0][0]
    if table is not None and store.checkpoint_offset is not None:
        out["dispatchedPhyOffset"] = store.checkpoint_offset  # the table's CHECKPOINT_TOPIC row
    out["queueCount"] = sum(len(t["queues"]) for t in topics)
    out["topics"] = topics
    return out


def _time_at(reader: StoreReader, times: StoreQuery, topic: str, qid: int, queue_offset: int) -> int | None:
    """The store time of the message a queue entry points at; None when the entry or record is unreadable."""
    entry = reader.queues.entry(topic, qid, queue_offset)
    try:
        return times.store_timestamp(entry[0]) if entry is not None else None
    except RmqError:
        return None


class _TopicSummary:
    """A topic as its consumers see it: the messages its queues hold (between each queue's min and max
    offset), their bytes (the entries' sizes) and the first and last store time among them."""

    def __init__(self) -> None:
        self.messages = self.bytes = 0
        self.first: int | None = None
        self.last: int | None = None

    def add(self, reader: StoreReader, times: StoreQuery, topic: str, qid: int, low: int, high: int) -> None:
        if high <= low:
            return
        self.messages += high - low
        for qoffs, entries in reader.queues.read(topic, qid):
            keep = (qoffs >= low) & (qoffs < high)
            self.bytes += int(entries["size"][keep].sum())
        first, last = _time_at(reader, times, topic, qid, low), _time_at(reader, times, topic, qid, high - 1)
        if first is not None:
            self.first = first if self.first is None else min(self.first, first)
        if last is not None:
            self.last = last if self.last is None else max(self.last, last)

    def to_json(self) -> dict:
        return {"messages": self.messages, "bytes": self.bytes, "firstStoreTimestamp": self.first,
                "lastStoreTimestamp": self.last}


def _index(reader: StoreReader) -> dict:
    files = reader.index_paths()
    out: dict = {"files": len(files)}
    if not files:
        return out
    headers = [reader.index_file(p).header for p in files]
    out["fileSize"] = Counter(p.stat().st_size for p in files).most_common(1)[0][0]
    out["entries"] = sum(max(h["indexCount"] - index.FIRST_INDEX, 0) for h in headers)
    out["firstBeginTimestamp"] = headers[0]["beginTimestamp"]
    out["lastEndTimestamp"] = headers[-1]["endTimestamp"]
    out["lastEndPhyOffset"] = headers[-1]["endPhyOffset"]
    return out


def _checkpoint(reader: StoreReader, last_ts: int | None) -> dict:
    if not reader.paths.checkpoint.is_file():
        return {"present": False}
    cp = reader.checkpoint()
    out = {"present": True, **cp.to_json()}
    if last_ts is not None:
        lag = last_ts - cp.physicMsgTimestamp
        out["physicBehindDataMs"] = lag  # > 0: records newer than the checkpoint (normal until the next flush)
    return out


def _ha(reader: StoreReader) -> dict | None:
    """The 5.x replication state (epochs, broker identity, the checkpoint's 5.x longs); None without any."""
    from rmqtool.structures.epoch.state import ha_state

    state = ha_state(reader.paths.root)
    return state.summary() if state.present else None


def _timer(root: Path) -> dict:
    from rmqtool.engine.kind import TIMER_FILES

    out = {}
    for name in TIMER_FILES:
        p = root / name
        if p.is_dir():
            segs = list_segments(p)
            out[name] = {"segments": len(segs), "bytes": sum(s.size for s in segs)}
        elif p.exists():
            out[name] = {"bytes": p.stat().st_size}
    return out


# What `info` shows of each registered structure: (JSON key, summary of the reader and the doc so far).
_SECTIONS = {
    "commitlog": ("commitlog", lambda reader, doc: _commitlog(reader)),
    "consumequeue": ("consumeQueues", lambda reader, doc: _queues(reader)),
    "index": ("index", lambda reader, doc: _index(reader)),
    "checkpoint": ("checkpoint", lambda reader, doc: _checkpoint(reader, doc["commitlog"].get("lastStoreTimestamp"))),
    "epoch": ("ha", lambda reader, doc: _ha(reader)),
}


def _hole(low: int, high: int, size: int) -> dict:
    """A stretch [low, high) of the log no segment holds, with the names of the segment files missing there."""
    from rmqtool.files.paths import offset_name
    from rmqtool.structures.commitlog.geometry import missing_starts

    return {"from": low, "to": high, "missing": [offset_name(s) for s in missing_starts((low, high), size)]}
