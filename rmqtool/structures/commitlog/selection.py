"""Which records of a log a reader asked for: topic, queue, store time, tag and key, all of them together.

Each filter is a mask over a scanned batch's columns: the topic ids the scanner groups, the queueId and
storeTimestamp columns, and for TAGS and KEYS/UNIQ_KEY one compiled pass over the properties bytes of
the records the other filters kept (`selectkernel`), read as the broker reads them. The filters run in
a fixed order, cheapest first, and a tally of what each one kept names the part of the question that
excluded everything when nothing is left.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rmqtool.errors import RmqError
from rmqtool.structures.commitlog.properties import KEYS, TAGS, UNIQ_KEY
from rmqtool.structures.commitlog.scan import RecordBatch
from rmqtool.structures.commitlog.selectkernel import carries
from rmqtool.text import iso_time


@dataclass(frozen=True)
class _Part:
    """One filter: the records it keeps of those still in, and how a sentence names it."""

    keep: Callable[[RecordBatch, np.ndarray], np.ndarray]  # (batch, rows still in) -> mask over those rows
    held: str  # the records that passed it: "records{held}"
    missing: str  # what none of the records had: "none of the records ... {missing}"


@dataclass(frozen=True)
class Selection:
    """The records of `topic`, in queue `queue`, stored within [begin, end] (epoch ms, both included), whose
    TAGS is `tag` and that carry `key` (a KEYS word or the UNIQ_KEY); None leaves a field open. A filter no
    record could pass (a negative queue, an empty tag or key, begin after end) is refused at once."""

    topic: str | None = None
    queue: int | None = None
    begin: int | None = None
    end: int | None = None
    tag: str | None = None
    key: str | None = None

    def __post_init__(self) -> None:
        if self.queue is not None and self.queue < 0:
            raise RmqError(f"--queue {self.queue}: a queue id is 0 or more")
        if self.tag == "":
            raise RmqError("--tag '' names no tag: the broker keeps no empty TAGS (give the tag to select by)")
        if self.key == "":
            raise RmqError("--key '' names no key: the broker indexes no empty key (give a KEYS word or a UNIQ_KEY)")
        if self.begin is not None and self.end is not None and self.begin > self.end:
            raise RmqError(f"--begin {iso_time(self.begin)} is after --end {iso_time(self.end)}: no time lies "
                           "between them")

    @property
    def narrows(self) -> bool:
        """Whether any filter is given (else every record is selected)."""
        return bool(self.parts())

    def parts(self) -> list[_Part]:
        """The filters given, in the order they run."""
        parts = []
        if self.topic is not None:
            parts.append(_Part(_of_topic(self.topic), f" of topic {self.topic}", f"is of topic {self.topic}"))
        if self.queue is not None:
            parts.append(_Part(_in_queue(self.queue), f" in queue {self.queue}", f"is in queue {self.queue}"))
        if self.begin is not None or self.end is not None:
            window = _window_words(self.begin, self.end)
            parts.append(_Part(_stored_within(self.begin, self.end), f" stored {window}", f"was stored {window}"))
        if self.tag is not None:
            parts.append(_Part(_tagged(self.tag), f" tagged {self.tag}", f"is tagged {self.tag}"))
        if self.key is not None:
            parts.append(_Part(_keyed(self.key), f" with key {self.key}",
                               f"carries the key {self.key} (a KEYS word or the UNIQ_KEY)"))
        return parts

    def narrow(self, batch: RecordBatch, passed: list[int]) -> RecordBatch:
        """The records of `batch` every filter keeps; `passed[i]` (one per part) grows by the records that
        passed the first i + 1 filters."""
        parts = self.parts()
        if not parts or not len(batch):
            return batch
        while len(passed) < len(parts):
            passed.append(0)
        kept = np.ones(len(batch), dtype=np.bool_)
        for i, part in enumerate(parts):
            rows = np.flatnonzero(kept)
            if not len(rows):
                break
            kept[rows] = part.keep(batch, rows)
            passed[i] += int(np.count_nonzero(kept))
        return batch if kept.all() else batch.select(kept)

    def why_empty(self, scanned: int, passed: list[int], where: str = "") -> str | None:
        """When filters kept nothing of the `scanned` records, the first that excluded everything left (exit 3
        for the caller), in a sentence: "none of the 87 records{where} of topic T is tagged X"; None when a
        record passed them all or no filter is given."""
        parts = self.parts()
        counts = [*passed, *[0] * (len(parts) - len(passed))]
        if not parts or counts[-1]:
            return None
        before, held = scanned, ""
        for part, count in zip(parts, counts, strict=True):
            if not count:
                return f"none of the {before} record{'' if before == 1 else 's'}{where}{held} {part.missing}"
            before, held = count, held + part.held
        return None


def _window_words(begin: int | None, end: int | None) -> str:
    if begin is not None and end is not None:
        return f"from {iso_time(begin)} to {iso_time(end)}"
    return f"at or after {iso_time(begin)}" if begin is not None else f"at or before {iso_time(end)}"


def _of_topic(topic: str) -> Callable[[RecordBatch, np.ndarray], np.ndarray]:
    def keep(batch: RecordBatch, rows: np.ndarray) -> np.ndarray:
        ids, names = batch.topics()
        return np.isin(ids[rows], [i for i, name in enumerate(names) if name == topic])
    return keep


def _in_queue(queue: int) -> Callable[[RecordBatch, np.ndarray], np.ndarray]:
    return lambda batch, rows: batch.cols["queueId"][rows] == queue


def _stored_within(begin: int | None, end: int | None) -> Callable[[RecordBatch, np.ndarray], np.ndarray]:
    def keep(batch: RecordBatch, rows: np.ndarray) -> np.ndarray:
        stored = batch.cols["storeTimestamp"][rows]
        inside = np.ones(len(rows), dtype=np.bool_)
        if begin is not None:
            inside &= stored >= begin
        if end is not None:
            inside &= stored <= end
        return inside
    return keep


def _carrying(value: str, whole: str, words: str | None = None) -> Callable[[RecordBatch, np.ndarray], np.ndarray]:
    """The records whose property `whole` is `value`, or one of whose `words` property's words is."""
    def keep(batch: RecordBatch, rows: np.ndarray) -> np.ndarray:
        return carries(np.frombuffer(batch.buf, dtype=np.uint8), batch.props_pos[rows], batch.props_len[rows], value,
                       whole, words)
    return keep


def _tagged(tag: str) -> Callable[[RecordBatch, np.ndarray], np.ndarray]:
    return _carrying(tag, TAGS)


def _keyed(key: str) -> Callable[[RecordBatch, np.ndarray], np.ndarray]:
    return _carrying(key, UNIQ_KEY, KEYS)  # as the broker indexes a message: its UNIQ_KEY and each KEYS word
