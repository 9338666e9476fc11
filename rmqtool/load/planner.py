"""Where many records go, decided before a byte is written (plain numpy).

Given the records' lengths, the commitlog's write position and the segment size, the
layout puts each record where the broker's append would: behind the previous one while it
leaves 8 bytes in its segment, else at the start of the next segment behind a blank marker.
A broker batch (a group of records) moves to the next segment whole, even when its first
record alone would fit. Records as stored (an export) go where they were: each at its
commitLogOffset when that is the write position, or at the start of the next segment behind
a blank marker (where a broker batch rolled); anything else is refused.
Queue offsets are taken from the consume queues' offset table (`QueueOffsets.take_vector`).
Records without a queue get one round-robin per topic, as a producer picks them. import,
append --batch and the Spark load plan through here: `LoadPlanner` takes a load chunk by chunk
and keeps only its counters, never the records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rmqtool.structures.commitlog import message
from rmqtool.structures.consumequeue import queue_keys, queue_of_key
from rmqtool.structures.consumequeue.offsets import QueueOffsets, ranks

NO_QUEUE = -1  # a row that names no queue: the planner assigns one


@dataclass
class Layout:
    physical_offset: np.ndarray  # where each record starts
    blanks: np.ndarray  # physical offsets of blank markers (each closes its segment)
    end: int  # the commitlog's write position after the last record


class PlacementError(ValueError):
    """A record that cannot go where the plan must put it."""

    def __init__(self, row: int, reason: str) -> None:
        super().__init__(reason)
        self.row = row


def plan_layout(lengths: np.ndarray, start: int, segment_size: int, groups: np.ndarray | None = None) -> Layout:
    """Each record's physical offset; one binary search per segment the records reach. `groups`
    (ascending first rows, starting with 0) makes each group of records one unit that never splits."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if groups is not None and len(lengths):
        groups = np.asarray(groups, dtype=np.int64)
        try:
            whole = _plan_units(np.add.reduceat(lengths, groups), start, segment_size)
        except PlacementError as e:
            raise PlacementError(int(groups[e.row]), f"a broker batch of {e}") from None
        size = np.diff(np.r_[groups, len(lengths)])
        within = np.cumsum(lengths) - lengths - np.repeat(np.cumsum(lengths)[groups] - lengths[groups], size)
        return Layout(np.repeat(whole.physical_offset, size) + within, whole.blanks, whole.end)
    return _plan_units(lengths, start, segment_size)


def place_as_stored(lengths: np.ndarray, offsets: np.ndarray, start: int, segment_size: int) -> Layout:
    """The layout of records that go back where they were stored; PlacementError names the first
    record that is not at the write position nor at the next segment's start behind a blank."""
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(lengths)
    if n == 0:
        return Layout(offsets, np.zeros(0, dtype=np.int64), start)
    expected = np.r_[start, offsets[:-1] + lengths[:-1]]  # the write position before each record
    next_segment = expected - expected % segment_size + segment_size
    rolled = (offsets == next_segment) & (expected % segment_size != 0)
    bad = np.flatnonzero((offsets != expected) & ~rolled)
    if len(bad):
        k = int(bad[0])
        w, o = int(expected[k]), int(offsets[k])
        geometry = (f"the exported store's mappedFileSizeCommitLog (this store's is {segment_size}: give the "
                    "exported store's broker.conf with --config)")
        if o > w:  # records are missing before this one: a salvage skipped a corrupt region, or rows were left out
            raise PlacementError(k, f"commitLogOffset {o} is not the write position {w} (a gap: {o - w} bytes, "
                                    "records missing before it); import --repack writes the records one after "
                                    f"another at new offsets; an export of a store of other segment sizes needs "
                                    f"{geometry}")
        raise PlacementError(k, f"commitLogOffset {o} is not the write position {w} (an overlap: {w - o} bytes); "
                                f"import a whole export into the store it continues, with {geometry}")
    over = np.flatnonzero(~message.fits(lengths, segment_size - offsets % segment_size))
    if len(over):
        k = int(over[0])
        raise PlacementError(k, f"the record at commitLogOffset {int(offsets[k])} ({int(lengths[k])} bytes) "
                                f"does not fit its segment of {segment_size} bytes")
    return Layout(offsets, expected[rolled], int(offsets[-1] + lengths[-1]))


def _plan_units(lengths: np.ndarray, start: int, segment_size: int) -> Layout:
    n = len(lengths)
    n = len(lengths)
    ends = np.cumsum(lengths)  # end of record k relative to the first record, before any blank
    out = np.empty(n, dtype=np.int64)
    blanks: list[int] = []
    pos, i = start, 0
    while i < n:
        base = int(ends[i - 1]) if i else 0  # bytes of records before i
        segment_end = pos - pos % segment_size + segment_size
        j = int(np.searchsorted(ends, base + message.usable(segment_end - pos), side="right"))  # records i..j-1 fit
        if j == i:  # record i does not fit: close the segment with a blank marker
            if pos % segment_size == 0:
                raise PlacementError(i, f"{int(lengths[i])} bytes do not fit a commitlog segment of {segment_size}")
            blanks.append(pos)
            pos = segment_end
            continue
        out[i:j] = pos + np.r_[0, ends[i : j - 1] - base]
        pos += int(ends[j - 1]) - base
        i = j
    return Layout(out, np.array(blanks, dtype=np.int64), pos)


def assign_queues(topic_ids: np.ndarray, queue: np.ndarray, next_pick: dict[int, int], queues: int) -> np.ndarray:
    """Queue ids with every NO_QUEUE replaced round-robin per topic over `queues` queues;
    `next_pick` (topic id -> count of rows already assigned) carries the rotation between calls."""
    out = np.asarray(queue, dtype=np.int64).copy()
    free = np.flatnonzero(out == NO_QUEUE)
    if len(free):
        tids = topic_ids[free].astype(np.int64)
        rank, distinct, counts = ranks(tids)
        start = np.zeros(int(distinct.max()) + 1, dtype=np.int64)
        for t, n in zip(distinct.tolist(), counts.tolist(), strict=True):
            start[t] = next_pick.get(t, 0)
            next_pick[t] = start[t] + n
        out[free] = (start[tids] + rank) % queues
    return out


@dataclass
class QueueRotation:
    """The producer's queue choice for rows that name none: each topic's queues in turn, in load order."""

    queues: int
    topics: dict[str, int] = field(default_factory=dict)
    next_pick: dict[int, int] = field(default_factory=dict)

    def topic_ids(self, topic_names: list[str], topic_idx: np.ndarray) -> np.ndarray:
        gids = np.array([self.topics.setdefault(str(t), len(self.topics)) for t in topic_names], dtype=np.int64)
        return gids[topic_idx] if len(gids) else np.zeros(len(topic_idx), dtype=np.int64)

    def __call__(self, topic_names: list[str], topic_idx: np.ndarray, queue: np.ndarray) -> np.ndarray:
        return assign_queues(self.topic_ids(topic_names, topic_idx), queue, self.next_pick, self.queues)


@dataclass
class ChunkPlan:
    """Where one chunk of a load goes."""

    row_base: int  # the load-wide number of the chunk's first row
    queue_id: np.ndarray
    queue_offset: np.ndarray
    physical_offset: np.ndarray
    blanks: np.ndarray


@dataclass
class LoadPlanner:
    """Plans a load chunk by chunk, in load order, from lengths, topics and queues only.

    It continues a store's end and queue offset table (advancing the table) and remembers what the load
    touches: the segments, each topic-queue's first queue offset, the blank markers.
    """

    start: int
    segment_size: int
    queues: int
    table: QueueOffsets
    end: int = -1
    rows: int = 0
    first_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    rotation: QueueRotation | None = None

    def __post_init__(self) -> None:
        if self.end < 0:
            self.end = self.start
        self.rotation = self.rotation or QueueRotation(self.queues)

    def plan(self, topic_names: list[str], topic_idx: np.ndarray, queue: np.ndarray, lengths: np.ndarray,
             sys_flag: np.ndarray | None = None, *, stored_offset: np.ndarray | None = None,
             groups: np.ndarray | None = None) -> ChunkPlan:
        """Plan the next chunk: queues, queue offsets and physical offsets (where the records were
        stored when `stored_offset` is given; `groups` keeps broker batches whole). PlacementError
        names a record that cannot go where it must."""
        rotation = self.rotation
        global_topic = rotation.topic_ids(topic_names, topic_idx)
        queue_id = assign_queues(global_topic, queue, rotation.next_pick, self.queues)
        if stored_offset is not None:
            layout = place_as_stored(lengths, stored_offset, self.end, self.segment_size)
        else:
            layout = plan_layout(lengths, self.end, self.segment_size, groups)
        distinct, key_ids = np.unique(queue_keys(global_topic, queue_id), return_inverse=True)
        names = {v: k for k, v in rotation.topics.items()}
        keys = [(names[c >> 32], queue_of_key(c)) for c in distinct.tolist()]
        for k in keys:
            self.first_offsets.setdefault(k, self.table.next_offset(k))
        flags = np.zeros(len(lengths), dtype=np.int64) if sys_flag is None else sys_flag
        queue_offset = self.table.take_vector(keys, key_ids.ravel(), flags)
        plan = ChunkPlan(self.rows, queue_id, queue_offset, layout.physical_offset, layout.blanks)
        self.end = layout.end
        self.rows += len(lengths)
        return plan

    def segments(self) -> list[int]:
        """Start offsets of the segments the load writes into."""
        if self.end == self.start:
            return []
        first = self.start - self.start % self.segment_size
        return list(range(first, self.end, self.segment_size))
