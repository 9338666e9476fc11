"""fsck for a store, read-only, in both directions.

Commitlog: every record of every segment (length, magic, body CRC, physicalOffset field),
blank markers, the segment sequence and sizes, and a garbage tail after the end of the log.
Consume queues: every entry points at a record of its topic and queue with the same queue
offset, size and tagsCode; every record that belongs in a queue has its entry. Index: every
entry resolves to a record carrying that key, and every key of every indexed record is
reachable from its slot. Checkpoint times against the data; `abort` is a warning.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from rmqtool.format import consumequeue, index
from rmqtool.format.finding import ERROR, WARNING, Finding
from rmqtool.store.reader import StoreReader

_OFFSET_BITS = 40  # index pairs are matched as (keyHash << 40) | offset: stores below 1 TiB


@dataclass
class VerifyReport:
    messages: int = 0
    queue_entries: int = 0
    index_entries: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def problems(self) -> int:
        return sum(f.severity == ERROR for f in self.findings)

    def to_json(self) -> dict:
        return {"messages": self.messages, "queueEntries": self.queue_entries, "indexEntries": self.index_entries,
                "problems": self.problems, "warnings": len(self.findings) - self.problems,
                "findings": [f.to_json() for f in self.findings]}


@dataclass
class _Records:
    """Per good record: offset, size, queue key id, queue offset, tagsCode, in-queue; plus index keys."""

    offset: list = field(default_factory=list)
    size: list = field(default_factory=list)
    qkey: list = field(default_factory=list)
    qoffset: list = field(default_factory=list)
    tags: list = field(default_factory=list)
    in_cq: list = field(default_factory=list)
    key_hash: list = field(default_factory=list)
    key_offset: list = field(default_factory=list)
    last_store_ts: int = 0


def verify_store(reader: StoreReader) -> VerifyReport:
    report = VerifyReport()
    report.findings += reader.sequence_findings()
    cfg = reader.config
    for seg in reader.segments:
        if seg.size != cfg.mappedFileSizeCommitLog and {"mappedFileSizeCommitLog"} & reader.given:
            report.findings.append(Finding(str(seg.path), seg.start, f"segment is {seg.size} bytes, not "
                                           f"mappedFileSizeCommitLog={cfg.mappedFileSizeCommitLog}", seg.size))
    keys: dict[tuple[str, int], int] = {}
    recs = _scan(reader, report, keys)
    offsets = np.concatenate(recs.offset) if recs.offset else np.zeros(0, dtype=np.int64)
    _check_queues(reader, report, recs, keys, offsets)
    if cfg.messageIndexEnable:
        _check_index(reader, report, recs, offsets)
    _check_checkpoint(reader, report, recs)
    if reader.abort_present():
        report.findings.append(Finding(str(reader.paths.abort), 0, "abort file present: the last writer did not shut "
                                       "down cleanly (recovery will run)", 0, WARNING))
    report.findings.sort(key=lambda f: (f.file, f.offset))
    return report


def _scan(reader: StoreReader, report: VerifyReport, keys: dict[tuple[str, int], int]) -> _Records:
    from rmqtool.format.dispatchkernel import (
        D_IN_CQ,
        D_OFFSET,
        D_QUEUE_ID,
        D_QUEUE_OFFSET,
        D_SIZE,
        D_STORE_TS,
        D_TAGS_CODE,
        dispatch_records,
    )

    levels = np.asarray(reader.config.delay_levels_ms, dtype=np.int64)
    recs = _Records()
    for chunk in reader.scan(verify_crc=True):
        report.findings += chunk.findings
        b = chunk.batch
        if b is None or not len(b):
            continue
        n = len(b)
        found = dispatch_records(np.frombuffer(b.buf, dtype=np.uint8), b.geometry(), b.base, levels)
        fields, rec, hashes = found.fields, found.key_rec, found.key_hash
        ids, names = b.topics()
        name_keys = np.array([keys.setdefault((names[t], q), len(keys)) for t, q in
                              zip(ids.tolist(), fields[:, D_QUEUE_ID].tolist(), strict=True)], dtype=np.int64)
        report.messages += n
        recs.offset.append(fields[:, D_OFFSET].copy())
        recs.size.append(fields[:, D_SIZE].copy())
        recs.qkey.append(name_keys)
        recs.qoffset.append(fields[:, D_QUEUE_OFFSET].copy())
        recs.tags.append(fields[:, D_TAGS_CODE].copy())
        recs.in_cq.append(fields[:, D_IN_CQ].astype(bool))
        recs.key_hash.append(hashes.copy())
        recs.key_offset.append(fields[rec, D_OFFSET])
        recs.last_store_ts = max(recs.last_store_ts, int(fields[:, D_STORE_TS].max()))
    return recs


def _cat(parts: list, dtype=np.int64) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def _check_queues(reader: StoreReader, report: VerifyReport, recs: _Records, keys: dict, offsets: np.ndarray) -> None:
    size, qkey, qoff, tags = _cat(recs.size), _cat(recs.qkey), _cat(recs.qoffset), _cat(recs.tags)
    in_cq = _cat(recs.in_cq, bool)
    seen = np.zeros(len(offsets), dtype=bool)
    log_min = reader.segments[0].start if reader.segments else 0
    for topic in reader.topics():
        for qid in reader.queue_ids(topic):
            key = keys.get((topic, qid), -1)
            for queue_offsets, entries in reader.consume_queue(topic, qid):
                live = entries["commitLogOffset"] >= log_min  # entries below the log's start expired with it
                queue_offsets, entries = queue_offsets[live], entries[live]
                report.queue_entries += len(entries)
                path = str(reader.paths.queue_dir(topic, qid))
                where = np.searchsorted(offsets, entries["commitLogOffset"])
                found = (where < len(offsets)) & (offsets[np.minimum(where, len(offsets) - 1)]
                                                  == entries["commitLogOffset"]) if len(offsets) else \
                    np.zeros(len(entries), dtype=bool)
                w = np.minimum(where, max(len(offsets) - 1, 0))
                for i in np.flatnonzero(~found)[:100].tolist():
                    report.findings.append(Finding(path, int(queue_offsets[i]) * consumequeue.ENTRY_LEN,
                                                   f"entry {int(queue_offsets[i])} points at "
                                                   f"{int(entries['commitLogOffset'][i])}, where no record starts",
                                                   consumequeue.ENTRY_LEN))
                ok = np.flatnonzero(found)
                j = w[ok]
                bad = ((qkey[j] != key) | (qoff[j] != queue_offsets[ok]) | (size[j] != entries["size"][ok])
                       | (tags[j] != entries["tagsCode"][ok]))
                for i, jj in zip(ok[bad][:100].tolist(), j[bad][:100].tolist(), strict=True):
                    report.findings.append(Finding(path, int(queue_offsets[i]) * consumequeue.ENTRY_LEN,
                                                   f"entry {int(queue_offsets[i])} does not match the record at "
                                                   f"{int(offsets[jj])} (queue offset {int(qoff[jj])}, size "
                                                   f"{int(size[jj])}, tagsCode {int(tags[jj])})",
                                                   consumequeue.ENTRY_LEN))
                seen[j[~bad]] = True
    missing = np.flatnonzero(in_cq & ~seen)
    names = {v: k for k, v in keys.items()}
    for i in missing[:100].tolist():
        topic, qid = names[int(qkey[i])]
        report.findings.append(Finding(str(reader.paths.queue_dir(topic, qid)), int(qoff[i]) * consumequeue.ENTRY_LEN,
                                       f"record at {int(offsets[i])} (queue offset {int(qoff[i])}) has no "
                                       "consume-queue entry", consumequeue.ENTRY_LEN))
    if len(missing) > 100:
        report.findings.append(Finding(str(reader.paths.consumequeue), 0, f"{len(missing) - 100} more records "
                                       "without consume-queue entries", 0))


def _check_index(reader: StoreReader, report: VerifyReport, recs: _Records, offsets: np.ndarray) -> None:
    from rmqtool.format.indexkernel import reachable_entries

    want = (_cat(recs.key_hash) << _OFFSET_BITS) | _cat(recs.key_offset)
    log_min = reader.segments[0].start if reader.segments else 0
    log_end = int(offsets[-1] + _cat(recs.size)[-1]) if len(offsets) else log_min
    have_parts = []
    for path in reader.index_paths():
        view = reader.index_file(path)
        entries = view.entries()
        report.index_entries += len(entries)
        expired = entries["phyOffset"] < log_min  # their segments were cleaned
        pairs = (entries["keyHash"].astype(np.int64) << _OFFSET_BITS) | entries["phyOffset"].astype(np.int64)
        reach = reachable_entries(np.frombuffer(view.buf, dtype=np.uint8), view.hash_slots,
                                  min(view.header["indexCount"], view.index_num))[index.FIRST_INDEX:]
        for i in np.flatnonzero(~reach)[:20].tolist():
            report.findings.append(Finding(str(path), index.HEADER_LEN + view.hash_slots * index.SLOT_LEN
                                           + (i + 1) * index.ENTRY_LEN, f"entry {i + 1} cannot be reached from its "
                                           "slot (broken chain)", index.ENTRY_LEN))
        stray = ~np.isin(pairs, want) & ~expired
        past_end = entries["phyOffset"] >= log_end
        for i in np.flatnonzero(stray)[:20].tolist():
            at = index.HEADER_LEN + view.hash_slots * index.SLOT_LEN + (i + 1) * index.ENTRY_LEN
            if past_end[i]:  # recovery cut the log and kept the index, as the broker does: lookups skip these
                report.findings.append(Finding(str(path), at, f"entry {i + 1} points at {int(entries['phyOffset'][i])}"
                                               ", past the end of the log (a stale entry lookups skip)",
                                               index.ENTRY_LEN, WARNING))
            else:
                report.findings.append(Finding(str(path), at, f"entry {i + 1} (hash {int(entries['keyHash'][i])}) "
                                               f"points at {int(entries['phyOffset'][i])}, which holds no such key",
                                               index.ENTRY_LEN))
        have_parts.append(pairs[reach])
    have = _cat(have_parts)
    lost = np.flatnonzero(~np.isin(want, have))
    for i in lost[:100].tolist():
        report.findings.append(Finding(str(reader.paths.index), int(want[i] & ((1 << _OFFSET_BITS) - 1)),
                                       f"a key of the record at {int(want[i] & ((1 << _OFFSET_BITS) - 1))} is not in "
                                       "the index", 0))
    if len(lost) > 100:
        report.findings.append(Finding(str(reader.paths.index), 0, f"{len(lost) - 100} more keys missing", 0))


def _check_checkpoint(reader: StoreReader, report: VerifyReport, recs: _Records) -> None:
    if not reader.paths.checkpoint.exists() or not recs.offset:
        return
    cp = reader.checkpoint()
    if cp.physicMsgTimestamp > recs.last_store_ts:
        report.findings.append(Finding(str(reader.paths.checkpoint), 0, f"physicMsgTimestamp {cp.physicMsgTimestamp} "
                                       f"is after the newest record ({recs.last_store_ts}): records flushed before "
                                       "the checkpoint are gone (or recovery cut them)", 8, WARNING))
    if cp.logicsMsgTimestamp > recs.last_store_ts:
        report.findings.append(Finding(str(reader.paths.checkpoint), 8, f"logicsMsgTimestamp {cp.logicsMsgTimestamp} "
                                       f"is after the newest record ({recs.last_store_ts})", 8, WARNING))


def verify_path(path: str | os.PathLike, config_path=None) -> VerifyReport:
    from rmqtool.store.reader import open_reader

    return verify_store(open_reader(path, config_path))
