"""The consume queues of two replicas compared (`diff`, and `rebuild` against its staged queues).

Each topic/queue of either side, over the queue offsets both hold. A slave builds its queues from the
log it received: its first file starts at the file of the first queue offset it saw, pre-filled with
filler entries (0, 2147483647, 0), where the master has real entries for records the slave never had.
So on the side whose log starts later, an entry that is a filler or points before its log start is
expected where the other side's points there too, not a difference.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from rmqtool.structures.consumequeue import FILLER_SIZE
from rmqtool.structures.replicas import Comparison, Pair
from rmqtool.structures.view import StoreView


@dataclass
class QueueDiff:
    topic: str
    queue_id: int
    equal: int = 0
    expected: int = 0  # fillers (or entries before the log) on the side whose log starts later
    different: int = 0
    only_a: int = 0
    only_b: int = 0
    first_different: int | None = None
    entries: dict = field(default_factory=dict)  # the entries of both sides at `first_different`

    def to_json(self) -> dict:
        return {"topic": self.topic, "queueId": self.queue_id, "equal": self.equal, "expected": self.expected,
                "different": self.different, "onlyA": self.only_a, "onlyB": self.only_b,
                "firstDifferent": self.first_different, **({"entries": self.entries} if self.entries else {})}


def _queue_stream(reader: StoreView, topic: str, qid: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    if qid not in reader.queue_ids(topic):
        return iter(())
    return reader.consume_queue(topic, qid)


def _entry_json(e) -> dict:
    return {"commitLogOffset": int(e["commitLogOffset"]), "size": int(e["size"]), "tagsCode": int(e["tagsCode"])}


def diff_queue(a: StoreView, b: StoreView, topic: str, qid: int, later: str | None, later_start: int) -> QueueDiff:
    """One queue's entries side by side over the queue offsets both hold; `later` names the side whose log
    starts later (None: both start together), `later_start` where."""
    out = QueueDiff(topic, qid)
    for qoffs, ea, eb in _aligned(_queue_stream(a, topic, qid), _queue_stream(b, topic, qid), out):
        same = ea == eb
        if later is not None:
            mine, other = (ea, eb) if later == "a" else (eb, ea)
            filler = (mine["size"] == FILLER_SIZE) & (mine["commitLogOffset"] == 0) \
                & (mine["tagsCode"] == 0)
            before = (filler | (mine["commitLogOffset"] < later_start)) & (other["commitLogOffset"] < later_start)
            expected = ~same & before
        else:
            expected = np.zeros(len(same), dtype=bool)
        wrong = ~same & ~expected
        out.equal += int(same.sum())
        out.expected += int(expected.sum())
        if wrong.any():
            out.different += int(wrong.sum())
            i = int(np.argmax(wrong))
            if out.first_different is None:
                out.first_different = int(qoffs[i])
                out.entries = {"a": _entry_json(ea[i]), "b": _entry_json(eb[i])}
    return out


def _aligned(sa, sb, out: QueueDiff) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(queue offsets, A's entries, B's entries) where both hold the queue offsets; the entries only one
    side holds are counted in `out` (queue offsets ascend on each side)."""
    qa, ea = _next_part(sa)
    qb, eb = _next_part(sb)
    while qa is not None and qb is not None:
        top = min(int(qa[-1]), int(qb[-1]))
        na, nb = int(np.searchsorted(qa, top, "right")), int(np.searchsorted(qb, top, "right"))
        both, pa, pb = _overlap(qa[:na], qb[:nb])
        out.only_a += na - len(both)
        out.only_b += nb - len(both)
        if len(both):
            yield both, ea[pa], eb[pb]
        qa, ea = (qa[na:], ea[na:]) if na < len(qa) else _next_part(sa)
        qb, eb = (qb[nb:], eb[nb:]) if nb < len(qb) else _next_part(sb)
    out.only_a += _left(qa, sa)
    out.only_b += _left(qb, sb)


def _overlap(qa: np.ndarray, qb: np.ndarray) -> tuple[np.ndarray, slice | np.ndarray, slice | np.ndarray]:
    """The queue offsets both ascending arrays hold, and where they are in each: slices when both are runs
    without gaps (a queue file's entries), else the positions an intersection finds."""
    if len(qa) and len(qb) and qa[-1] - qa[0] == len(qa) - 1 and qb[-1] - qb[0] == len(qb) - 1:
        lo, hi = max(int(qa[0]), int(qb[0])), min(int(qa[-1]), int(qb[-1])) + 1
        if lo >= hi:
            return qa[:0], slice(0, 0), slice(0, 0)
        return (qa[lo - int(qa[0]) : hi - int(qa[0])], slice(lo - int(qa[0]), hi - int(qa[0])),
                slice(lo - int(qb[0]), hi - int(qb[0])))
    return np.intersect1d(qa, qb, assume_unique=True, return_indices=True)


def _left(qoffs: np.ndarray | None, stream) -> int:
    """The entries of a side left once the other ran out: the part at hand and the rest of its stream."""
    return (len(qoffs) if qoffs is not None else 0) + sum(len(part) for part, _ in stream)


def _next_part(stream) -> tuple[np.ndarray | None, np.ndarray | None]:
    for qoffs, entries in stream:
        if len(qoffs):
            return qoffs, entries
    return None, None


def diff_queues(a: StoreView, b: StoreView, later: str | None, later_start: int) -> list[QueueDiff]:
    """Every topic/queue of either side compared (`later`, `later_start`: as `diff_queue` takes them)."""
    out = []
    for topic in sorted(set(a.topics()) | set(b.topics())):
        for qid in sorted(set(a.queue_ids(topic)) | set(b.queue_ids(topic))):
            out.append(diff_queue(a, b, topic, qid, later, later_start))
    return out


def compare(pair: Pair) -> Comparison:
    """`consumeQueues`: the totals over every queue and each queue's counts; the sides agree when no entry
    differs (an entry only one side holds is no difference)."""
    ea, eb = pair.held_a, pair.held_b
    later, later_start = (None, 0) if ea.start == eb.start else (("a", ea.start) if ea.start > eb.start
                                                                 else ("b", eb.start))
    queues = diff_queues(pair.a, pair.b, later, later_start)
    section = {"queues": len(queues), **{k: sum(getattr(q, f) for q in queues) for k, f in (
        ("equal", "equal"), ("expected", "expected"), ("different", "different"), ("onlyA", "only_a"),
        ("onlyB", "only_b"))}, "perQueue": [q.to_json() for q in queues]}
    return Comparison({"consumeQueues": section}, agree=section["different"] == 0)
