"""Where a queue's time-bucket edges fall, without reading the log: within a queue the store time rises
with the queue offset (the broker stamps records in append order), so each edge's queue offset is found
by binary search over the entries, reading only the 8-byte storeTimestamp of the record an entry points
at (the broker's `getOffsetInQueueByTime` does the same search).

A damaged queue whose store times do not rise cannot break the counts: a binary search's answer still
rises with the edge, and the first and last edge are clamped to the queue's ends, so every message of
the queue whose record the log holds is counted in some bucket. An entry whose record the log does not
hold (its bytes lie in a missing or truncated segment, or past the log's end) is counted apart, never in a
bucket: `held` says which, from the segments' sizes alone (no record is read for it).

`view` is the store being read: `queues` (a `QueueStore`), `segments` and `segment_starts` (the log's
segments, sorted, and their start offsets).
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


def held(view: StoreView, offsets: np.ndarray, sizes: np.ndarray, log_start: int, log_end: int) -> np.ndarray:
    """Which of the records at `offsets` (of `sizes` bytes) the log holds: inside [log_start, log_end) and
    inside one segment file as it is on disk (a missing segment holds none, a truncated one none past its
    size). A record's bytes are not read: a zeroed stretch inside a whole file still counts as held."""
    import numpy as np

    ends = offsets + sizes
    ok = (offsets >= log_start) & (ends <= log_end)
    if not view.segments:
        return np.zeros(len(offsets), dtype=bool)
    which = np.searchsorted(np.asarray(view.segment_starts, dtype=np.int64), offsets, side="right") - 1
    file_ends = np.asarray([s.end for s in view.segments], dtype=np.int64)
    return ok & (which >= 0) & (ends <= file_ends[np.maximum(which, 0)])


@dataclass
class QueueCounts:
    """One queue's entries between two offsets, bucketed by store time: per edge, the messages and bytes of
    held records stored before it (`before`, `bytes_before`); in all, the entries and their sizes, and the held
    records and theirs; `unheld` the commitlog offsets of the entries whose records the log does not hold."""

    before: np.ndarray
    bytes_before: np.ndarray
    entries: int = 0
    entry_bytes: int = 0
    records: int = 0
    record_bytes: int = 0
    unheld: list[np.ndarray] = field(default_factory=list)
    unheld_sizes: list[np.ndarray] = field(default_factory=list)


def queue_edges(view: StoreView, maps: MapCache, topic: str, queue_id: int, low: int, high: int,
                edges: np.ndarray, log_start: int, log_end: int) -> QueueCounts:
    """The queue's entries between `low` and `high` counted against `edges` (`QueueCounts`); the first edge is
    clamped to (0, 0) and the last to the held records' count and bytes, so the differences count every held
    record once. Reads the queue one file at a time."""
    import numpy as np

    out = QueueCounts(np.zeros(len(edges), dtype=np.int64), np.zeros(len(edges), dtype=np.int64))
    for qoffs, entries in view.queues.read(topic, queue_id):
        kept = entries[(qoffs >= low) & (qoffs < high)]
        if not len(kept):
            continue
        offsets, sizes = kept["commitLogOffset"].astype(np.int64), kept["size"].astype(np.int64)
        out.entries += len(kept)
        out.entry_bytes += int(sizes.sum())
        mask = held(view, offsets, sizes, log_start, log_end)
        if not mask.all():
            out.unheld.append(offsets[~mask])
            out.unheld_sizes.append(sizes[~mask])
            offsets, sizes = offsets[mask], sizes[mask]
        if not len(offsets):
            continue
        pos = edge_positions(view, maps, offsets, edges)
        cumulative = np.concatenate(([0], np.cumsum(sizes)))
        out.before += pos
        out.bytes_before += cumulative[pos]
        out.records += len(offsets)
        out.record_bytes += int(cumulative[-1])
        del kept, cumulative
    if len(edges):
        count, nbytes = out.before, out.bytes_before
        count[0], nbytes[0] = 0, 0
        count[-1], nbytes[-1] = out.records, out.record_bytes
        count, nbytes = np.maximum.accumulate(count), np.maximum.accumulate(nbytes)
        count[-1], nbytes[-1] = out.records, out.record_bytes
        out.before, out.bytes_before = np.minimum(count, count[-1]), np.minimum(nbytes, nbytes[-1])
    return out
