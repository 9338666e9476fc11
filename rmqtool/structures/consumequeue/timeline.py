"""Where a queue's time-bucket edges fall, without reading the log: within a queue the store time rises
with the queue offset (the broker stamps records in append order), so each edge's queue offset is found
by binary search over the entries, reading only the 8-byte storeTimestamp of the record an entry points
at (the broker's `getOffsetInQueueByTime` does the same search).

A damaged queue whose store times do not rise cannot break the counts: a binary search's answer still
rises with the edge, and the first and last edge are clamped to the queue's ends, so every message of
the queue is counted in some bucket.

`view` is the store being read: `queues` (a `QueueStore`), `segments` and `segment_starts` (the log's
segments, sorted, and their start offsets).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqtool.structures.commitlog import message
from rmqtool.structures.consumequeue.queues import MapCache
from rmqtool.structures.view import StoreView

if TYPE_CHECKING:
    import numpy as np


def store_times(view: StoreView, maps: MapCache, offsets: np.ndarray) -> np.ndarray:
    """The storeTimestamp of the record at each commitlog offset; -1 where no segment holds one."""
    import numpy as np

    out = np.full(len(offsets), -1, dtype=np.int64)
    if not len(offsets) or not view.segments:
        return out
    which = np.searchsorted(np.asarray(view.segment_starts, dtype=np.int64), offsets, side="right") - 1
    for i in np.unique(which[which >= 0]):
        seg = view.segments[int(i)]
        here = np.flatnonzero(which == i)
        out[here] = message.store_timestamps_at(maps.get(seg.path), offsets[here] - seg.start)
    return out


def edge_positions(view: StoreView, maps: MapCache, offsets: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """For each edge, how many of the records at `offsets` (in queue order) are stored before it."""
    import numpy as np

    n = len(offsets)
    lo = np.zeros(len(edges), dtype=np.int64)
    hi = np.full(len(edges), n, dtype=np.int64)
    if n == 0:
        return lo
    first, last = store_times(view, maps, offsets[[0, n - 1]])
    lo[edges > last] = n  # every record is before the edge
    hi[edges <= first] = 0  # none is
    active = lo < hi
    while active.any():
        at = np.flatnonzero(active)
        mid = (lo[at] + hi[at]) // 2
        before = store_times(view, maps, offsets[mid]) < edges[at]
        lo[at[before]] = mid[before] + 1
        hi[at[~before]] = mid[~before]
        active = lo < hi
    return lo


def queue_edges(view: StoreView, maps: MapCache, topic: str, queue_id: int, low: int, high: int,
                edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(messages, bytes) of the queue's entries between `low` and `high` stored before each edge, and the
    entries' sizes in all; the first edge is clamped to (0, 0) and the last to (high - low, that sum), so the
    differences count every message once. Reads the queue one file at a time."""
    import numpy as np

    count = np.zeros(len(edges), dtype=np.int64)
    nbytes = np.zeros(len(edges), dtype=np.int64)
    total = 0
    for qoffs, entries in view.queues.read(topic, queue_id):
        kept = entries[(qoffs >= low) & (qoffs < high)]
        if not len(kept):
            continue
        pos = edge_positions(view, maps, kept["commitLogOffset"].astype(np.int64), edges)
        sizes = np.concatenate(([0], np.cumsum(kept["size"].astype(np.int64))))
        count += pos
        nbytes += sizes[pos]
        total += int(sizes[-1])
        del kept, sizes
    if len(edges):
        count[0], nbytes[0] = 0, 0
        count[-1], nbytes[-1] = max(high - low, 0), total
        count, nbytes = np.maximum.accumulate(count), np.maximum.accumulate(nbytes)
        count[-1], nbytes[-1] = max(high - low, 0), total
        count, nbytes = np.minimum(count, count[-1]), np.minimum(nbytes, nbytes[-1])
    return count, nbytes, total
