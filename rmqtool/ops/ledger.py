"""The loss ledger of a cut: every record the store held at or after the cut that a repair does not append
again, counted from what the store had, not only from what decodes.

What the store had after the cut C is two accounts of the same records: the consume-queue entries that
point at or past C (each names a record: topic, queue, queue offset, size), and the log's own walk from
C (the intact records, and the damaged regions between them). A record survives when the walk finds it
intact: the repair appends it again. Every entry whose record does not survive is a lost record; a
damaged region no entry points into is one more (a record no queue listed, a transaction's half message
say), its bytes the region's. The ledger is the plan's: the repair stages exactly the survivors it names.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.ops.log_rows import log_batches
from rmqtool.report import COMMITLOG, ERROR, Finding
from rmqtool.structures import consumequeue
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.properties import UNIQ_KEY
from rmqtool.structures.commitlog.scan import RecordBatch
from rmqtool.structures.commitlog.sysflag import enters_consume_queue

LEDGER_FILE = "ledger.jsonl"  # in the repair's lost/ folder: one lost record per line
UNIQ_KEYS_READ = 100_000  # lost records whose UNIQ_KEY is looked up in the log; the rest say null


@dataclass(frozen=True)
class LostRecord:
    """One record the repair does not keep: where it was, what it was when anything names it, and why."""

    offset: int
    size: int
    topic: str | None
    queue_id: int | None
    queue_offset: int | None
    uniq_key: str | None
    why: str

    def to_json(self) -> dict:
        return {"commitLogOffset": self.offset, "storeSize": self.size, "topic": self.topic, "queueId": self.queue_id,
                "queueOffset": self.queue_offset, "uniqKey": self.uniq_key, "why": self.why}


@dataclass
class QueueSurvivors:
    """A queue's records after the cut that survive, in log order: their old queue offsets."""

    old: list[np.ndarray] = field(default_factory=list)

    def offsets(self) -> np.ndarray:
        return np.concatenate(self.old) if self.old else np.zeros(0, dtype=np.int64)


@dataclass
class Ledger:
    """What a cut at `cut` keeps and loses."""

    cut: int
    survivors: dict[tuple[str, int], QueueSurvivors] = field(default_factory=dict)
    records_kept: int = 0
    bytes_kept: int = 0
    lost: list[LostRecord] = field(default_factory=list)
    lost_entries: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)  # old queue offsets lost
    damage: list[Finding] = field(default_factory=list)  # the damaged regions the walk from the cut met

    @property
    def records_lost(self) -> int:
        return len(self.lost)

    @property
    def bytes_lost(self) -> int:
        return sum(r.size for r in self.lost)

    def lines(self) -> Iterator[bytes]:
        for r in self.lost:
            yield json.dumps(r.to_json(), ensure_ascii=False).encode() + b"\n"


def ledger_of_cut(reader: StoreReader, cut: int, holes: list[tuple[int, int]] = ()) -> Ledger:
    """Walk the log from `cut` and read every queue's entries at or past it: the ledger of a cut there. `holes`
    are ranges before the cut that hold no record (a missing segment filled with an end marker): the entries
    that point into them name records lost with it."""
    ledger = Ledger(cut)
    kept_offsets: list[np.ndarray] = []
    for item in log_batches(reader, from_offset=cut):
        if isinstance(item, Finding):
            if item.structure == COMMITLOG and item.severity == ERROR:
                ledger.damage.append(item)
            continue
        if not len(item):
            continue
        for key, qoffs in queue_offsets(item):
            ledger.survivors.setdefault(key, QueueSurvivors()).old.append(qoffs)
        kept_offsets.append(item.offsets.astype(np.int64))
        ledger.records_kept += len(item)
        ledger.bytes_kept += int(item.cols["totalSize"].sum())
    kept = np.sort(np.concatenate(kept_offsets)) if kept_offsets else np.zeros(0, dtype=np.int64)
    named = _lost_entries(reader, cut, kept, ledger, holes)
    _lost_regions(ledger, named)
    _read_uniq_keys(reader, ledger)
    return ledger


def queue_offsets(batch: RecordBatch) -> Iterator[tuple[tuple[str, int], np.ndarray]]:
    """((topic, queue id), queue offsets in log order) of the records of `batch` that enter a consume queue (a
    transaction's prepared or rolled-back half does not)."""
    ids, names = batch.topics()
    qids, qoffs = batch.cols["queueId"], batch.cols["queueOffset"]
    queued = enters_consume_queue(batch.cols["sysFlag"])
    for t, name in enumerate(names):
        of_topic = queued & (ids == t)
        for qid in np.unique(qids[of_topic]).tolist():
            yield (name, int(qid)), qoffs[of_topic & (qids == qid)].astype(np.int64)


def _lost_entries(reader: StoreReader, cut: int, kept: np.ndarray, ledger: Ledger,
                  holes: list[tuple[int, int]]) -> np.ndarray:
    """Every queue entry at or past the cut whose record is not kept, or in a hole before it; returns their
    offsets, sorted."""
    queues = reader.queues
    found: list[np.ndarray] = []
    for topic in queues.topics():
        for qid in queues.queue_ids(topic):
            lost_qoffs: list[np.ndarray] = []
            for qoffs, entries in queues.read(topic, qid):
                valid = consumequeue.valid_mask(entries)
                phys = entries["commitLogOffset"].astype(np.int64)
                sizes = entries["size"].astype(np.int64)
                real = valid & (sizes != consumequeue.FILLER_SIZE)
                at = real & (phys >= cut)
                in_hole = np.zeros(len(phys), dtype=bool)
                for lo, hi in holes:
                    in_hole |= real & (phys >= lo) & (phys < hi)
                if not (at.any() or in_hole.any()):
                    continue
                where = np.searchsorted(kept, phys[at])
                survives = (where < len(kept)) & (kept[np.minimum(where, len(kept) - 1)] == phys[at]) \
                    if len(kept) else np.zeros(int(at.sum()), dtype=bool)
                gone = np.sort(np.concatenate([np.flatnonzero(at)[~survives], np.flatnonzero(in_hole)]))
                for i in gone.tolist():
                    ledger.lost.append(LostRecord(int(phys[i]), int(sizes[i]), topic, qid, int(qoffs[i]), None,
                                                  "its record is not intact"))
                lost_qoffs.append(np.asarray(qoffs)[gone].astype(np.int64))
                found.append(phys[gone])
            if lost_qoffs:
                ledger.lost_entries[(topic, qid)] = np.concatenate(lost_qoffs)
    return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)


def _lost_regions(ledger: Ledger, named: np.ndarray) -> None:
    """A damaged region no lost entry points into is one lost record of the region's bytes."""
    for f in ledger.damage:
        inside = np.searchsorted(named, f.offset, side="left") < np.searchsorted(named, f.offset + f.bytes,
                                                                                  side="left")
        if not inside:
            ledger.lost.append(LostRecord(f.offset, f.bytes, None, None, None, None, f.reason))
    ledger.lost.sort(key=lambda r: r.offset)


def _read_uniq_keys(reader: StoreReader, ledger: Ledger) -> None:
    """Each lost record's client msgId (UNIQ_KEY), where its bytes still decode far enough to give it."""
    for i, r in enumerate(ledger.lost[:UNIQ_KEYS_READ]):
        if r.topic is None:
            continue
        try:
            msg = reader.read_record(r.offset, verify_crc=False)
        except (RmqError, ValueError, OSError):
            continue
        if isinstance(msg, message.Message):
            key = msg.properties.get(UNIQ_KEY)
            if key:
                ledger.lost[i] = LostRecord(r.offset, r.size, r.topic, r.queue_id, r.queue_offset, key, r.why)
