"""The topic-queue offset table (the broker's topicQueueTable): the queue offset the next record of each
(topic, queueId) takes, the one place a queue offset is assigned.

One rule, `takes_queue_offset`: a plain or committed record takes the next offset of its queue; a prepared
or rolled-back one gets 0 and leaves the counter where it was. Three ways to ask, sharing that rule: one
record (`take`), a client batch of n records of one queue (`take_batch`: the first offset), and a vector of
records of many queues for a bulk load (`take_vector`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from rmqtool.structures.commitlog import sysflag
from rmqtool.structures.consumequeue.queue import ConsumeQueue

QueueKey = tuple[str, int]  # (topic, queueId)

takes_queue_offset = sysflag.enters_consume_queue  # the rule (an int or an array of sysFlags)


class QueueOffsets(Mapping[QueueKey, int]):
    """(topic, queueId) -> the next queue offset; read as a mapping, advanced only by the `take` methods."""

    __slots__ = ("_next",)

    def __init__(self, next_offsets: Mapping[QueueKey, int] | None = None) -> None:
        self._next: dict[QueueKey, int] = dict(next_offsets or {})

    @classmethod
    def of_queues(cls, queues: Mapping[QueueKey, ConsumeQueue]) -> QueueOffsets:
        """The table of a store's open consume queues: each continues after its last entry."""
        return cls({key: cq.max_offset_in_queue for key, cq in queues.items()})

    def __getitem__(self, key: QueueKey) -> int:
        return self._next[key]

    def __iter__(self) -> Iterator[QueueKey]:
        return iter(self._next)

    def __len__(self) -> int:
        return len(self._next)

    def __repr__(self) -> str:
        return f"QueueOffsets({self._next!r})"

    def next_offset(self, key: QueueKey) -> int:
        """Where queue `key` continues (0 for a queue not written yet)."""
        return self._next.get(key, 0)

    def next_for(self, key: QueueKey, sys_flag: int) -> int:
        """The queue offset a record of `sys_flag` would take in `key` now, without taking it."""
        return self._next.get(key, 0) if takes_queue_offset(sys_flag) else 0

    def take(self, key: QueueKey, sys_flag: int) -> int:
        """One record's queue offset; the counter advances when the record takes one."""
        if not takes_queue_offset(sys_flag):
            return 0
        at = self._next.get(key, 0)
        self._next[key] = at + 1
        return at

    def take_batch(self, key: QueueKey, n: int, sys_flag: int) -> int:
        """The first queue offset of `n` consecutive records of `key` sharing `sys_flag` (a client batch)."""
        if not takes_queue_offset(sys_flag):
            return 0
        at = self._next.get(key, 0)
        self._next[key] = at + n
        return at

    def take_vector(self, keys: list[QueueKey], key_ids: np.ndarray, sys_flag: np.ndarray) -> np.ndarray:
        """Each record's queue offset, in record order (`key_ids` index `keys`); the counters advance by the
        records of each queue that take one."""
        take = takes_queue_offset(sys_flag)
        out = np.zeros(len(key_ids), dtype=np.int64)
        ids = key_ids[take]
        if len(ids):
            rank, distinct, counts = ranks(ids)
            base = np.zeros(len(keys), dtype=np.int64)
            for k, n in zip(distinct.tolist(), counts.tolist(), strict=True):
                base[k] = self._next.get(keys[k], 0)
                self._next[keys[k]] = int(base[k]) + n
            out[take] = rank + base[ids]
        return out

    def snapshot(self) -> dict[QueueKey, int]:
        """A copy of the table (a write's mark)."""
        return dict(self._next)

    def restore(self, snapshot: Mapping[QueueKey, int]) -> None:
        """Put the table back to a `snapshot` (a write rolled back)."""
        self._next = dict(snapshot)


def ranks(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rank of each element among equal ids in order, distinct ids, count of each)."""
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    counts = np.diff(np.r_[starts, len(ids)])
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids)) - np.repeat(starts, counts)
    return rank, sorted_ids[starts], counts
