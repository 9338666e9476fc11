"""`info`: what an operator asks first about a store, gathered read-only and without a full scan.

The kind and its evidence, the commitlog's extent (first/last record and their store times),
the consume queues (form, file size, every queue's offset range), the index files, the
checkpoint against the data, and whether `abort` is present and a process holds `lock`.
Each topic is summed up as its consumers see it: the messages between its queues' min and max
offsets, their bytes (the entries' sizes) and the first and last store time among them.
Cost: the first and the last segment are scanned, the consume queues' entries (20 bytes a
message), two records per queue and each index header are read; nothing else. The timeline
(`ops.timeline`) reads the entries once more and about 20 store times per bucket edge per queue file; the
disk use (`ops.diskuse`) is one `lstat` per file of the store and each topic's share from that same pass.
"""

from __future__ import annotations

import os

from rmqtool.engine.reader import StoreReader, open_root_reader
from rmqtool.ops.diskuse import disk_use
from rmqtool.ops.timeline import store_timeline
from rmqtool.structures.registry import REGISTRY


def store_info(path: str | os.PathLike, config: str | os.PathLike | None = None, *, buckets: int | None = None) \
        -> dict:
    """The `info --json` document; `buckets`: the timeline's bucket count at most (60 unless given)."""
    reader = open_root_reader(path, config)
    try:
        return info_doc(reader, buckets=buckets)
    finally:
        reader.queues.close()


def info_doc(reader: StoreReader, *, buckets: int | None = None, queue_rows: list[dict] | None = None) -> dict:
    """`store_info` of an open reader; `queue_rows`, when given, gains each queue's messages and bytes (read
    by the same pass as the timeline)."""

    kind = reader.store.kind
    doc: dict = {"store": str(reader.paths.root), **kind.to_json()}
    for structure in REGISTRY:  # the log first: the checkpoint is read against its newest record
        section = structure.info(reader, doc)
        if section is not None:  # None: the store has none of the structure's files (5.x HA)
            key, value = section
            doc[key] = value
    doc["messagesInQueues"] = sum(q["maxOffset"] - q["minOffset"] for t in doc["consumeQueues"]["topics"]
                                  for q in t["queues"])
    rows: list[dict] = [] if queue_rows is None else queue_rows
    doc["timeline"] = store_timeline(reader, doc["consumeQueues"]["topics"], buckets, rows, doc["commitlog"])
    doc["recordsInLog"] = doc["messagesInQueues"] - doc["timeline"]["uncounted"]["messages"]
    doc["disk"] = disk_use(reader, doc, rows)
    doc.update(reader.store.files.state())
    return doc

