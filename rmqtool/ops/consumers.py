"""Where consumer groups stand, read from the store at rest: each group's committed offset per queue
against the queue's bounds (lag in messages and in store time), its retry and dead-letter topics,
and whether a message was consumed (offsets changed while the broker is down: ops/offset_admin.py).

Cost: a queue's bounds are read once (its files' names, the written part of its last file, a few
entries of its first), and one entry and one record header per group and queue for the time lag;
the commitlog is never scanned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmqtool.engine.reader import StoreReader
from rmqtool.errors import NoSuchQueue, NotFound, RmqError
from rmqtool.ops.query import StoreQuery
from rmqtool.structures.commitlog import message, sysflag
from rmqtool.structures.commitlog.delay import SCHEDULE_TOPIC
from rmqtool.structures.config import delayoffsets, offsets, subscriptions

OK, BEHIND_MIN, PAST_MAX, NO_QUEUE, NO_OFFSET = "ok", "behind-min", "past-max", "no-queue", "no-offset"
STATE_TEXT = {
    BEHIND_MIN: "committed offset below the queue's min: messages were deleted before the group consumed them",
    PAST_MAX: "committed offset past the queue's max: the group claims messages the store does not hold",
    NO_QUEUE: "the store holds no such queue (the topic or queue is gone)",
    NO_OFFSET: "the topic's queue has no committed offset for the group",
}


@dataclass
class QueueLag:
    """One group on one queue."""

    group: str
    topic: str
    queue_id: int
    committed: int | None
    min_offset: int | None = None
    max_offset: int | None = None
    lag: int | None = None  # messages the group will still be served: max - max(committed, min)
    lag_ms: int | None = None  # newest message's store time - the next unconsumed message's
    missed: int = 0  # behind-min: messages deleted before the group consumed them
    state: str = OK

    def to_json(self) -> dict:
        return {"group": self.group, "topic": self.topic, "queueId": self.queue_id, "committedOffset": self.committed,
                "minOffset": self.min_offset, "maxOffset": self.max_offset, "lag": self.lag, "lagMs": self.lag_ms,
                "missed": self.missed, "state": self.state}


@dataclass
class GroupLag:
    group: str
    queues: list[QueueLag] = field(default_factory=list)
    retry_messages: int = 0
    dlq_messages: int = 0

    @property
    def lag(self) -> int:
        return sum(q.lag or 0 for q in self.queues)

    @property
    def lag_ms(self) -> int | None:
        return max((q.lag_ms for q in self.queues if q.lag_ms is not None), default=None)

    @property
    def no_offset(self) -> list[QueueLag]:
        """Its queues without a committed offset: their messages are not in `lag` (where the group starts on
        them is the client's consumeFromWhere)."""
        return [q for q in self.queues if q.state == NO_OFFSET]

    @property
    def no_offset_messages(self) -> int:
        """Messages held in its queues without a committed offset (max - min of each)."""
        return sum(q.max_offset - q.min_offset for q in self.no_offset)

    @property
    def flagged(self) -> list[QueueLag]:
        return [q for q in self.queues if q.state not in (OK, NO_OFFSET)]

    def to_json(self) -> dict:
        return {"group": self.group, "topics": sorted({q.topic for q in self.queues}), "lag": self.lag,
                "lagMs": self.lag_ms, "retryMessages": self.retry_messages, "dlqMessages": self.dlq_messages,
                "flagged": len(self.flagged), "noOffsetQueues": len(self.no_offset),
                "noOffsetMessages": self.no_offset_messages, "queues": [q.to_json() for q in self.queues]}


class Progress:
    """The answers of one store: queue bounds and newest store times are read once and kept."""

    def __init__(self, reader: StoreReader) -> None:
        self.reader = reader
        self.query = StoreQuery(reader)
        self._bounds: dict[tuple[str, int], tuple[int, int] | None] = {}
        self._topics: set[str] | None = None

    def close(self) -> None:
        self.query.close()

    def bounds(self, topic: str, queue_id: int) -> tuple[int, int] | None:
        """(min, max) of a queue; None when the store has no such queue."""
        key = (topic, queue_id)
        if key not in self._bounds:
            try:
                self._bounds[key] = self.reader.queues.bounds(topic, queue_id)
            except NoSuchQueue:
                self._bounds[key] = None
        return self._bounds[key]

    def messages(self, topic: str) -> int:
        """Messages a topic's queues hold (0 for a topic the store lacks)."""
        if self._topics is None:
            self._topics = set(self.reader.queues.topics())
        if topic not in self._topics:
            return 0
        total = 0
        for qid in self.reader.queues.queue_ids(topic):
            found = self.bounds(topic, qid)
            total += found[1] - found[0] if found else 0
        return total

    def queue_lag(self, group: str, topic: str, queue_id: int, committed: int | None) -> QueueLag:
        """A group on a queue: its state and lag in messages (`lag_times` adds the lag in time)."""
        row = QueueLag(group, topic, queue_id, committed)
        found = self.bounds(topic, queue_id)
        if found is None:
            row.state = NO_QUEUE
            return row
        row.min_offset, row.max_offset = low, high = found
        if committed is None:
            row.state = NO_OFFSET
            return row
        if committed < low:
            row.state, row.missed = BEHIND_MIN, low - committed
        elif committed > high:
            row.state = PAST_MAX
        row.lag = max(high - max(committed, low), 0)
        return row

    def lag_times(self, rows: list[QueueLag]) -> None:
        """Each lagging row's lag in time: its queue's newest store time minus the store time of the next
        message it will be served; the entries and records are read in one gather per queue and segment."""
        import numpy as np

        lagging: dict[tuple[str, int], list[QueueLag]] = {}
        for row in rows:
            if row.lag:
                lagging.setdefault((row.topic, row.queue_id), []).append(row)
            elif row.lag == 0:
                row.lag_ms = 0
        for (topic, qid), queue_rows in lagging.items():
            wanted = [max(r.committed, r.min_offset) for r in queue_rows] + [queue_rows[0].max_offset - 1]
            physical = self.reader.queues.commit_log_offsets(topic, qid, np.asarray(wanted, dtype=np.int64))
            times = self.query.store_timestamps(physical).tolist()
            newest = times[-1]
            for row, at in zip(queue_rows, times, strict=False):
                row.lag_ms = newest - at if newest >= 0 and at >= 0 else None


def _table(reader: StoreReader) -> offsets.ConsumerOffsets:
    return offsets.load(reader.paths.root)


def consumer_lag(reader: StoreReader, group: str | None = None, topic: str | None = None) -> list[GroupLag]:
    """Every group's lag on every queue it has committed offsets for (or only `group`, `topic`), the
    groups by total lag, most first, and each group's queues likewise."""
    table = _table(reader)
    if group is not None and group not in table.groups():
        known = ", ".join(table.groups()[:20]) or "none"
        subscribed = " (subscriptionGroup.json has it: it never committed)" \
            if group in subscriptions.groups(reader.paths.root) else ""
        raise NotFound(f"group {group} has no committed offsets in {table.path}{subscribed} (groups: {known})")
    progress = Progress(reader)
    try:
        groups: dict[str, GroupLag] = {}
        for committed in table.entries():
            if (group is not None and committed.group != group) or (topic is not None and committed.topic != topic):
                continue
            lag = groups.setdefault(committed.group, GroupLag(committed.group))
            queue_ids = set(committed.queues) | set(reader.queues.queue_ids(committed.topic))
            for qid in sorted(queue_ids):
                lag.queues.append(progress.queue_lag(committed.group, committed.topic, qid,
                                                     committed.queues.get(qid)))
        progress.lag_times([row for lag in groups.values() for row in lag.queues])
        for lag in groups.values():
            lag.retry_messages = progress.messages(offsets.retry_topic(lag.group))
            lag.dlq_messages = progress.messages(offsets.dlq_topic(lag.group))
            lag.queues.sort(key=lambda q: (-(q.lag or 0), -(q.lag_ms or 0), q.topic, q.queue_id))
        return sorted(groups.values(), key=lambda g: (-g.lag, -(g.lag_ms or 0), g.group))
    finally:
        progress.close()


def progress_doc(reader: StoreReader, groups: list[GroupLag]) -> dict:
    """The `consumers --json` document of `consumer_lag`'s groups."""
    return {"store": str(reader.paths.root), "groups": [g.to_json() for g in groups],
            "flaggedQueues": sum(len(g.flagged) for g in groups)}


# ---- was this message consumed? ------------------------------------------------------------------
class Consumption:
    """Who has consumed a message, from the store's consumer and delay offsets (read once, on first
    use). A table that cannot be loaded is kept as `error` and answers nothing."""

    def __init__(self, root) -> None:
        self.root = root
        self.error: str | None = None
        self._offsets: offsets.ConsumerOffsets | None = None
        self._delay: delayoffsets.DelayOffsets | None = None

    def _tables(self) -> tuple[offsets.ConsumerOffsets, delayoffsets.DelayOffsets] | None:
        if self._offsets is None and self.error is None:
            try:
                self._offsets, self._delay = offsets.load(self.root), delayoffsets.load(self.root)
            except RmqError as e:
                self.error = str(e)
        return None if self.error else (self._offsets, self._delay)

    def of(self, msg: message.Message) -> dict | None:
        """Each group with an offset on the message's queue (consumed when the message's queue offset is
        below the committed one), and for a delayed message whether the schedule service has delivered
        it. None when the store keeps no such state for it."""
        tables = self._tables() if sysflag.enters_consume_queue(msg.sys_flag) else None
        if tables is None:
            return None
        table, delay = tables
        out: dict = {}
        groups = [{"group": c.group, "committedOffset": c.queues[msg.queue_id],
                   "consumed": msg.queue_offset < c.queues[msg.queue_id]}
                  for c in table.on_topic(msg.topic) if msg.queue_id in c.queues]
        if groups:
            out["groups"] = groups
        level = delayoffsets.level_of_queue(msg.queue_id)
        if msg.topic == SCHEDULE_TOPIC and level in delay.levels:
            out["delayLevel"], out["deliverOffset"] = level, delay.levels[level]
            out["delivered"] = delay.delivered(msg.queue_id, msg.queue_offset)
        return out or None
