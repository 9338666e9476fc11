"""The commitlog offsets a store's consume queues point at, read entry by entry: what the timeline's counts are
checked against."""

from __future__ import annotations

from pathlib import Path

from rmqtool.engine.reader import open_root_reader


def queued_offsets(store: Path, doc: dict) -> set[int]:
    """The commitLogOffset of every entry between each queue's min and max offset (`doc`: `info --json`)."""
    held: set[int] = set()
    reader = open_root_reader(store)
    try:
        for t in doc["consumeQueues"]["topics"]:
            for q in t["queues"]:
                for qoffs, entries in reader.queues.read(t["topic"], q["queueId"]):
                    keep = (qoffs >= q["minOffset"]) & (qoffs < q["maxOffset"])
                    held.update(int(o) for o in entries["commitLogOffset"][keep])
    finally:
        reader.queues.close()
    return held
