"""fsck for a store, read-only, in both directions, in memory bounded by a window of the log.

Commitlog: every record of every segment (length, magic, body CRC, physicalOffset field),
blank markers, the segment sequence and sizes, and a garbage tail after the end of the log.
Consume queues: every entry points at a record of its topic and queue with the same queue
offset, size and tagsCode; every record that belongs in a queue has its entry; the queue files'
names and sizes (`consumequeue.rules`, which recovery refuses by), and the entries of a file past
its queue's end, which a read by queue offset still serves. Index: every
entry resolves to a record carrying that key, and every key of every indexed record is
reachable from its slot. Checkpoint times against the data; `abort` is a warning.

The log is read window by window (a segment, or at most `WINDOW_RECORDS` records of one);
consume-queue entries and index entries are read through cursors that advance in step with
the log, since both are written in log order. So memory holds one window of records, one
consume-queue file per queue, one index file and the window's index entries (copied out of
however many files they span, and checked together), whatever the store's size.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rmqtool.engine.reader import IndexFiles, IndexFileView, StoreReader
from rmqtool.errors import RmqError
from rmqtool.files.paths import parse_offset_name
from rmqtool.files.segments import SegmentFile, release_pages
from rmqtool.report import CHECKPOINT, CONSUMEQUEUE, ERROR, INDEX, STORE, WARNING, CollectSink, Finding, Reporter
from rmqtool.structures import FILE_OWNERS, REGISTRY, consumequeue, index, place_in_store
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.geometry import sequence_findings
from rmqtool.structures.consumequeue import queue_keys, queue_of_key, rules
from rmqtool.structures.consumequeue.queues import MapCache, queue_file_entries
from rmqtool.structures.index.check import entry_finding

WINDOW_RECORDS = 1 << 19  # records held at once
REPORT_CAP = 100  # findings of one kind for one file before they are summed up in one more
_HASH_BITS = 31  # an index keyHash is the absolute value of a Java int hash
_SPAN_BITS = 63 - _HASH_BITS  # a window's pairs are matched as (offset - its first key's) << 31 | keyHash: a
# window lies within one segment, whose size is a Java int, so its offsets span less than 2^31
_REACH_CHUNK = 1 << 20  # index entries walked between two page releases


@dataclass
class VerifyReport:
    """What verify found. `findings` lists at most REPORT_CAP of one kind per file, then one "N more
    like" row that stands for the N others; the totals count every finding, listed or not."""

    messages: int = 0
    queue_entries: int = 0
    index_entries: int = 0
    collected: CollectSink = field(default_factory=lambda: CollectSink(cap=REPORT_CAP))
    file: str | None = None  # the one file checked alone (None: a store)
    file_kind: str | None = None  # what that file is: the `file_kind` of a registered structure
    notes: list[str] = field(default_factory=list)  # how the file was read, for a person (stderr)

    def __post_init__(self) -> None:
        self.reporter = Reporter(self.collected)

    @property
    def findings(self) -> list[Finding]:
        """The listed findings: at most REPORT_CAP of one kind per file, then one "N more like" row."""
        return self.collected.findings

    @property
    def unlisted(self) -> Counter[tuple[str, str]]:
        """(kind, severity): found beyond the listed rows (a "N more like" row is listed, and stands for
        one of the N)."""
        return self.collected.unlisted

    def totals(self) -> Counter[tuple[str, str]]:
        """Every finding found, listed or not, per (kind, severity)."""
        return Counter((f.kind, f.severity) for f in self.findings) + self.unlisted

    @property
    def problems(self) -> int:
        return sum(n for (_, severity), n in self.totals().items() if severity == ERROR)

    @property
    def warnings(self) -> int:
        return sum(n for (_, severity), n in self.totals().items() if severity != ERROR)

    def by_kind(self) -> dict[str, int]:
        """Every finding found, per kind."""
        out: Counter[str] = Counter()
        for (kind, _), n in self.totals().items():
            out[kind] += n
        return dict(sorted(out.items()))

    def to_json(self) -> dict:
        alone = {} if self.file is None else {"file": self.file, "fileKind": self.file_kind}
        return {**alone, "messages": self.messages, "queueEntries": self.queue_entries,
                "indexEntries": self.index_entries, "problems": self.problems, "warnings": self.warnings,
                "byKind": self.by_kind(), "findings": [f.to_json() for f in self.findings]}


@dataclass
class Window:
    """The good records of one stretch of the log, as the dispatcher sees them."""

    end: int  # the physical offset after the last record
    offset: np.ndarray
    size: np.ndarray
    qkey: np.ndarray  # index into the (topic, queue) table
    qoffset: np.ndarray
    tags: np.ndarray
    in_cq: np.ndarray
    key_hash: np.ndarray  # one per index key, with the offset of its record
    key_offset: np.ndarray
    last_store_ts: int


def verify_store(reader: StoreReader) -> VerifyReport:
    report = VerifyReport()
    sink = report.collected
    cfg = reader.config
    log_min = reader.segments[0].start if reader.segments else 0
    keys: dict[tuple[str, int], int] = {}
    queues = _Queues(reader, keys, log_min, report, sink)
    indexes = _IndexCursor(reader, log_min, report, sink) if cfg.messageIndexEnable else None
    last_ts, end = 0, log_min
    for window in record_windows(reader, report, keys):
        queues.check(window)
        if indexes is not None:
            indexes.check(window)
        last_ts, end = max(last_ts, window.last_store_ts), window.end
    queues.finish(end)
    structures = {s.name: s.file_findings(reader) for s in REGISTRY}  # after the walk: queues are read
    for found in structures.values():
        report.reporter.extend(found)
    for f in structures["consumequeue"]:
        if f.kind == rules.FILE_PAST_END:
            _past_end_entries(reader, Path(f.file), sink)
    if indexes is not None:
        indexes.finish(end)
    sink.close()
    _check_checkpoint(reader, report, last_ts if report.messages else None)
    if reader.abort_present():
        report.reporter.add(Finding(str(reader.paths.abort), 0, "abort file present: the last writer did not shut "
                                       "down cleanly (recovery will run)", 0, WARNING, STORE, "abort-present"))
    report.findings.sort(key=lambda f: (f.file, f.offset))
    return report


def record_windows(reader: StoreReader, report: VerifyReport, keys: dict[tuple[str, int], int]) -> Iterator[Window]:
    """The log's good records window by window (the scanner's findings go to `report`); `keys`
    numbers each (topic, queue) as it is met."""
    from rmqtool.structures.commitlog.dispatchkernel import dispatch_records

    levels = np.asarray(reader.config.delay_levels_ms, dtype=np.int64)
    parts: list[tuple] = []
    held, file = 0, None
    for chunk in reader.scan(verify_crc=True):
        report.reporter.extend(chunk.findings)
        b = chunk.batch
        if b is None or not len(b):
            continue
        if parts and (b.file != file or held + len(b) > WINDOW_RECORDS):
            yield _window(parts)
            parts, held = [], 0
        file = b.file
        found = dispatch_records(np.frombuffer(b.buf, dtype=np.uint8), b.geometry(), b.base, levels)
        ids, names = b.topics()
        pairs, which = np.unique(queue_keys(ids, found.queue_id), return_inverse=True)
        table = np.array([keys.setdefault((names[p >> 32], queue_of_key(p)), len(keys))
                          for p in pairs.tolist()], dtype=np.int64)
        qkey = table[which.ravel()]
        report.messages += len(b)
        held += len(b)
        parts.append((found.offset.copy(), found.size.copy(), qkey, found.queue_offset.copy(), found.tags_code.copy(),
                      found.in_cq.astype(bool), found.key_hash.copy(), found.key_offsets, int(found.store_ts.max())))
    if parts:
        yield _window(parts)


def _window(parts: list[tuple]) -> Window:
    cols = [np.concatenate([p[k] for p in parts]) for k in range(8)]
    return Window(int(cols[0][-1] + cols[1][-1]), *cols, max(p[8] for p in parts))


class _QueueCursor:
    """One consume queue's entries (by the broker's reading rule), taken in log order."""

    def __init__(self, reader: StoreReader, topic: str, queue_id: int, log_min: int) -> None:
        self.files = reader.consume_queue(topic, queue_id)
        self.path = reader.queues.location(topic, queue_id)
        self.log_min = log_min
        self.qoffs = np.zeros(0, dtype=np.int64)
        self.entries = np.zeros(0, dtype=consumequeue.entry_dtype())
        self.at = 0
        self.done = False

    def take(self, end: int | None) -> tuple[np.ndarray, np.ndarray]:
        """(queue offsets, entries) of the next entries pointing below `end` (all that are left: None)."""
        got_q, got_e = [], []
        while True:
            if self.at >= len(self.entries) and (self.done or not self._next_file()):
                break
            offs = self.entries["commitLogOffset"][self.at :]
            stop = len(offs) if end is None else int(np.argmax(offs >= end)) if (offs >= end).any() else len(offs)
            got_q.append(self.qoffs[self.at : self.at + stop])
            got_e.append(self.entries[self.at : self.at + stop])
            self.at += stop
            if self.at < len(self.entries):
                break
        if not got_q:
            return self.qoffs[:0], self.entries[:0]
        q, e = np.concatenate(got_q), np.concatenate(got_e)
        live = e["commitLogOffset"] >= self.log_min  # entries below the log's start expired with it
        return q[live], e[live]

    def _next_file(self) -> bool:
        for qoffs, entries in self.files:
            if len(entries):
                self.qoffs, self.entries, self.at = qoffs, entries, 0
                return True
        self.done = True
        return False


class _Queues:
    """Every consume queue checked against the windows of the log, in both directions."""

    def __init__(self, reader: StoreReader, keys: dict, log_min: int, report: VerifyReport, sink: CollectSink) -> None:
        self.keys, self.report, self.sink = keys, report, sink
        self.cursors = {(t, q): _QueueCursor(reader, t, q, log_min) for t in reader.topics()
                        for q in reader.queue_ids(t)}
        self.dirs = {tq: c.path for tq, c in self.cursors.items()}
        self.reader = reader

    def check(self, w: Window) -> None:
        seen = np.zeros(len(w.offset), dtype=bool)
        for (topic, qid), cursor in self.cursors.items():
            qoffs, entries = cursor.take(w.end)
            if len(entries):
                self._match(w, self.keys.get((topic, qid), -1), cursor.path, qoffs, entries, seen)
        names = {k: tq for tq, k in self.keys.items()}
        missing = np.flatnonzero(w.in_cq & ~seen)
        for qkey in np.unique(w.qkey[missing]).tolist():
            topic, qid = names[qkey]
            path = self.dirs.get((topic, qid)) or self.reader.queues.location(topic, qid)
            self.sink.add_each(path, "record-without-entry", missing[w.qkey[missing] == qkey], lambda i, path=path: (
                rules.entry_finding(path, int(w.qoffset[i]), f"record at {int(w.offset[i])} (queue offset "
                                    f"{int(w.qoffset[i])}) has no consume-queue entry", "record-without-entry")))

    def _match(self, w: Window, key: int, path: str, qoffs: np.ndarray, entries: np.ndarray,
               seen: np.ndarray) -> None:
        """Entries against the window's records; marks in `seen` the records they rightly point at."""
        self.report.queue_entries += len(entries)
        target = entries["commitLogOffset"]
        where = np.minimum(np.searchsorted(w.offset, target), max(len(w.offset) - 1, 0))
        found = (w.offset[where] == target) if len(w.offset) else np.zeros(len(entries), dtype=bool)
        self.sink.add_each(path, "entry-without-record", np.flatnonzero(~found), lambda i: rules.entry_finding(
            path, int(qoffs[i]), f"entry {int(qoffs[i])} points at {int(target[i])}, where no record starts",
            "entry-without-record"))
        ok = np.flatnonzero(found)
        j = where[ok]
        bad = ((w.qkey[j] != key) | (w.qoffset[j] != qoffs[ok]) | (w.size[j] != entries["size"][ok])
               | (w.tags[j] != entries["tagsCode"][ok]))
        rec = dict(zip(ok[bad].tolist(), j[bad].tolist(), strict=True))
        self.sink.add_each(path, "entry-mismatch", ok[bad], lambda i: rules.entry_finding(
            path, int(qoffs[i]), f"entry {int(qoffs[i])} does not match the record at "
            f"{int(w.offset[rec[i]])} (queue offset {int(w.qoffset[rec[i]])}, size {int(w.size[rec[i]])}, tagsCode "
            f"{int(w.tags[rec[i]])})", "entry-mismatch"))
        seen[j[~bad]] = True

    def finish(self, end: int) -> None:
        """Entries left after the last window point past the end of the log."""
        for cursor in self.cursors.values():
            qoffs, entries = cursor.take(None)
            self.report.queue_entries += len(entries)
            self.sink.add_each(cursor.path, "entry-past-log-end", np.arange(len(entries)), lambda i, c=cursor, q=qoffs,
                               e=entries: rules.entry_finding(c.path, int(q[i]), f"entry {int(q[i])} points at "
                                                              f"{int(e['commitLogOffset'][i])}, past the end of the "
                                                              f"log ({end})", "entry-past-log-end"))


def _past_end_entries(reader: StoreReader, path: Path, sink: CollectSink) -> None:
    """The entries of a queue file past its queue's end (`rules.FILE_PAST_END`), which a read by queue
    offset still serves, against the records they point at: each must be the record of its own topic,
    queue and queue offset, of its size (a file copied to another name is not)."""
    qoffs, entries = queue_file_entries(SegmentFile(path, int(path.name), path.stat().st_size))
    _entries_against_records(reader, path.parent, qoffs, entries, sink, " (past the queue's end)")


def _entries_against_records(reader: StoreReader, folder: Path, qoffs: np.ndarray, entries: np.ndarray,
                             sink: CollectSink, where: str = "", levels: list[int] | None = None) -> None:
    """Entries of the queue at `folder` (consumequeue/<topic>/<queueId>) against the records they point at,
    one record read each: each must be the record of its own topic, queue and queue offset, of its size
    (and, given the delay `levels`, of its tagsCode). `where` says which entries they are, in each reason."""
    topic, qid = folder.parent.name, int(folder.name)
    maps = MapCache()
    wrong: dict[str, dict[int, str]] = {"entry-without-record": {}, "entry-mismatch": {}}  # kind: row: reason
    try:
        for i, (q, e) in enumerate(zip(qoffs.tolist(), entries.tolist(), strict=True)):
            seg = reader.segment_for(e[0])
            rec = None if seg is None else message.decode(maps.get(seg.path), e[0] - seg.start, verify_crc=False,
                                                          expected_offset=e[0])
            if not isinstance(rec, message.Message):
                wrong["entry-without-record"][i] = f"entry {q}{where} points at {e[0]}, where no record starts"
                continue
            tags = None if levels is None else consumequeue.record_tags_code(rec, levels)
            if (rec.topic, rec.queue_id, rec.queue_offset, rec.store_size) != (topic, qid, q, e[1]) or \
                    (levels is not None and tags != e[2]):
                wrong["entry-mismatch"][i] = (f"entry {q}{where} does not match the record at {e[0]} ({rec.topic}/"
                                              f"{rec.queue_id} queue offset {rec.queue_offset}, size {rec.store_size}"
                                              + ("" if levels is None else f", tagsCode {tags}") + ")")
    finally:
        maps.close()
    for kind, reasons in wrong.items():
        sink.add_each(str(folder), kind, np.array(list(reasons), dtype=np.int64), lambda i, kind=kind,
                      reasons=reasons: rules.entry_finding(folder, int(qoffs[i]), reasons[i], kind))


@dataclass
class _Slice:
    """Consecutive entries of one index file (entry numbers first+1 ..), copied out of its map."""

    path: str
    hash_slots: int  # of its file: where its entries sit
    first: int  # position of the first (0 = entry 1)
    key_hash: np.ndarray  # int64
    phy_offset: np.ndarray  # int64
    reach: np.ndarray  # reachable from its slot

    def rows(self) -> np.ndarray:
        return np.arange(self.first, self.first + len(self.key_hash))

    def pairs(self, base: int) -> np.ndarray:
        """The entries' (keyHash, phyOffset) packed as the window's keys are (`_packed`)."""
        return _packed(self.key_hash, self.phy_offset, base)

    def entry(self, i: int) -> tuple[int, int]:
        """(keyHash, phyOffset) of entry row `i`."""
        return int(self.key_hash[i - self.first]), int(self.phy_offset[i - self.first])


class _IndexCursor:
    """The index files' entries, one file at a time, taken in log order (files follow the log, and
    so do the entries of each file). Pages of entries already passed are given back.

    A window's entries, from however many files, are checked against its keys together: one sort
    of the keys and one of the reachable entries per window, so a store of many small index files
    costs what a store of one large file does."""

    def __init__(self, reader: StoreReader, log_min: int, report: VerifyReport, sink: CollectSink) -> None:
        self.reader, self.log_min, self.report, self.sink = reader, log_min, report, sink
        self.paths = iter(reader.index_paths())
        self.buf = None
        self.entries = np.zeros(0, dtype=index.entry_dtype())
        self.reach = np.zeros(0, dtype=bool)
        self.hash_slots = 0
        self.path = ""
        self.at = 0

    def _next_file(self) -> bool:
        view = None
        files = IndexFiles(self.reader.config, self.reader.given)
        while view is None:  # a file that cannot be read is a finding, and the next one is taken
            path = next(self.paths, None)
            if path is None:
                return False
            view = _open_index(files, path, self.report)
        self.entries, self.reach = _index_file_rules(view, self.report)
        self.buf, self.hash_slots = view.buf, view.hash_slots
        self.path, self.at = str(path), 0
        return True

    def _at(self, i: int) -> int:
        return index.entry_position(self.hash_slots, i + 1)

    def _take(self, end: int | None) -> Iterator[_Slice]:
        """One slice per file of the next entries below `end` (None: all that are left)."""
        while True:
            if self.at >= len(self.entries) and not self._next_file():
                return
            stop = _first_at_or_past(self.entries["phyOffset"], self.at, end)
            part = self.entries[self.at : stop]
            yield _Slice(self.path, self.hash_slots, self.at, part["keyHash"].astype(np.int64),
                         part["phyOffset"].astype(np.int64), self.reach[self.at : stop])
            release_pages(self.buf, self._at(self.at), self._at(stop))
            self.at = stop
            if self.at < len(self.entries):
                return

    def check(self, w: Window) -> None:
        """The window's entries against its keys (each entry names a key of its record) and its keys
        against the reachable entries (each key is indexed)."""
        base = int(w.key_offset.min()) if len(w.key_offset) else 0
        want = _packed(w.key_hash.astype(np.int64), w.key_offset, base)
        slices = list(self._take(w.end))
        pairs = _concat([s.pairs(base) for s in slices])
        expired = _concat([s.phy_offset for s in slices]) < self.log_min  # their segments were cleaned
        known = _member(pairs, want) | expired
        at = 0
        for s in slices:
            bad = np.flatnonzero(~known[at : at + len(s.key_hash)])
            at += len(s.key_hash)
            if len(bad):
                self._wrong_key(s, bad + s.first)
        lost = w.key_offset[~_member(want, _concat([s.pairs(base)[s.reach] for s in slices]))]
        folder = str(self.reader.paths.index)
        self.sink.add_each(folder, "key-not-indexed", np.arange(len(lost)), lambda i: Finding(
            folder, int(lost[i]), f"a key of the record at {int(lost[i])} is not in the index", 0, structure=INDEX,
            kind="key-not-indexed"))

    def _wrong_key(self, s: _Slice, rows: np.ndarray) -> None:
        self.sink.add_each(s.path, "index-entry-wrong-key", rows, lambda i: entry_finding(
            s.path, s.hash_slots, i + 1, f"entry {i + 1} (hash {s.entry(i)[0]}) points at "
            f"{s.entry(i)[1]}, which holds no such key", "index-entry-wrong-key"))

    def finish(self, end: int) -> None:
        """Entries past the end of the log: recovery cut the log and kept the index, as the broker does."""
        for s in self._take(None):
            self.sink.add_each(s.path, "index-entry-stale", s.rows(), lambda i, s=s: entry_finding(
                s.path, s.hash_slots, i + 1, f"entry {i + 1} points at {s.entry(i)[1]}, past the end "
                f"of the log ({end}): a stale entry lookups skip", "index-entry-stale", WARNING))


def _open_index(files: IndexFiles, path: Path, report: VerifyReport) -> IndexFileView | None:
    """The file's view; None, after a finding, for a file its size does not fit (a cut file)."""
    from rmqtool.structures.index.check import file_size

    try:
        return files.index_file(path)
    except RmqError:
        cfg = files.config
        report.reporter.add(file_size(str(path), os.stat(path).st_size, cfg.maxHashSlotNum, cfg.maxIndexNum))
        return None


def _index_file_rules(view: IndexFileView, report: VerifyReport) -> tuple[np.ndarray, np.ndarray]:
    """An index file's own rules: its header against its entries, and every entry reachable from its slot.
    Returns the entries it holds (a count past them adds no empty ones) and which of them are reachable."""
    from rmqtool.structures.index.check import header_findings

    path = str(view.path)
    entries = view.entries()
    found, held = header_findings(path, view.header, entries, view.index_num)
    report.reporter.extend(found)
    report.index_entries += held
    reach = _reachable(view)[:held]
    report.collected.add_each(path, "index-entry-unreachable", np.flatnonzero(~reach), lambda i: entry_finding(
        path, view.hash_slots, i + 1, f"entry {i + 1} cannot be reached from its slot (broken chain)",
        "index-entry-unreachable"))
    return entries[:held], reach


def _reachable(view: IndexFileView) -> np.ndarray:
    """Which entries a lookup from the store's first moment meets (`chain.walk`'s rule), in one
    backward pass whose passed pages are given back as it goes (resident memory stays a chunk)."""
    from rmqtool.structures.index import chain

    reach = chain.reachable(np.frombuffer(view.buf, dtype=np.uint8), view.hash_slots,
                            chain.entry_bound(view.header["indexCount"], view.index_num),
                            view.header["beginTimestamp"], chunk=_REACH_CHUNK,
                            passed=lambda lo, hi: release_pages(view.buf, lo, hi))
    return reach[index.FIRST_INDEX :]


def _packed(key_hash: np.ndarray, phy_offset: np.ndarray, base: int) -> np.ndarray:
    """(phyOffset - base) << 31 | keyHash as one int64, exact for offsets in [base, base + 2^32); -1, which
    matches no key of the window (all within it), for any other offset."""
    rel = phy_offset - base
    inside = (rel >= 0) & (rel < (1 << _SPAN_BITS))
    return np.where(inside, (rel << _HASH_BITS) | key_hash, -1)


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _first_at_or_past(values: np.ndarray, start: int, end: int | None, step: int = 1 << 16) -> int:
    """The first position from `start` on whose value is >= `end` (len(values) when none; None: the end),
    looked for a step at a time so that only the pages up to it are read."""
    if end is None:
        return len(values)
    for lo in range(start, len(values), step):
        past = np.flatnonzero(values[lo : lo + step] >= end)
        if past.size:
            return lo + int(past[0])
    return len(values)


def _member(values: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Which of `values` are in `among` (one sort and a binary search: faster than np.isin here)."""
    if not len(among):
        return np.zeros(len(values), dtype=bool)
    ordered = np.sort(among)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    return ordered[at] == values


def _check_checkpoint(reader: StoreReader, report: VerifyReport, last_ts: int | None) -> None:
    if not reader.paths.checkpoint.exists() or last_ts is None:
        return
    cp = reader.checkpoint()
    path = str(reader.paths.checkpoint)
    if cp.physicMsgTimestamp > last_ts:
        report.reporter.add(Finding(path, 0, f"physicMsgTimestamp {cp.physicMsgTimestamp} is after the newest "
                                       f"record ({last_ts}): records flushed before the checkpoint are gone (or "
                                       "recovery cut them)", 8, WARNING, CHECKPOINT, "checkpoint-ahead"))
    if cp.logicsMsgTimestamp > last_ts:
        report.reporter.add(Finding(path, 8, f"logicsMsgTimestamp {cp.logicsMsgTimestamp} is after the newest "
                                       f"record ({last_ts})", 8, WARNING, CHECKPOINT, "checkpoint-ahead"))


def verify_path(path: str | os.PathLike, config_path=None) -> VerifyReport:
    """A store root verified whole, or one store file alone (`verify_file`)."""
    from rmqtool.engine.reader import open_reader

    if Path(path).is_file():
        return verify_file(Path(path), config_path)
    return verify_store(open_reader(path, config_path))


# -- one file alone --------------------------------------------------------------------------------------
def store_root_of(path: Path) -> Path | None:
    """The store root `path` is (a folder) or is in (a file at its place in a store); None for a lone file."""
    if path.is_dir():
        return path
    placed = place_in_store(path)
    return placed[1] if placed else None


def file_kind(path: Path) -> str:
    """What a store file is: its place in a store says, or else its content (the structures' recognition
    checks), when exactly one kind fits; a one-line refusal otherwise."""
    from rmqtool.engine.recognition import require_file

    placed = place_in_store(path)
    if placed is not None:
        return placed[0].file_kind
    kinds = [s.file_kind for s in FILE_OWNERS]
    fits = []
    for kind in kinds:
        try:
            require_file(path, kind)
        except RmqError:
            continue
        fits.append(kind)
    if len(fits) == 1:
        return fits[0]
    if not fits:
        raise RmqError(f"{path}: not a store root nor a store file verify reads ({_any(kinds)})")
    raise RmqError(f"{path}: cannot tell which store file this is (it could be {_any(fits)}): give it at its place "
                   "in a store")


def _any(kinds: tuple[str, ...] | list[str]) -> str:
    """"a commitlog segment, an index file or a checkpoint"."""
    named = [("an " if k[0] in "aeiou" else "a ") + k for k in kinds]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " or " + named[-1]


def verify_file(path: Path, config_path=None) -> VerifyReport:
    """One store file checked alone, by what verify knows of its structure: a commitlog segment's records
    (length, magic, body CRC, physicalOffset, blank marker, garbage tail) and size; a consume-queue file's
    name and size and, at its place in a store, its entries against the records they point at; an index
    file's size, header and chains; a checkpoint's page. Nothing else of the store is read."""
    kind = file_kind(path)
    report = VerifyReport(file=str(path), file_kind=kind)
    _FILE_CHECKS[kind](path, config_path, report)
    report.collected.close()
    report.findings.sort(key=lambda f: (f.file, f.offset))
    return report


def _segment_alone(path: Path, config_path, report: VerifyReport) -> None:
    reader = StoreReader(path, config_path)
    if reader.start_note is not None:
        report.notes.append(reader.start_note)
    report.reporter.extend(sequence_findings(reader.segments, reader.segment_size))  # its size, when configured
    for chunk in reader.scan(verify_crc=True):
        report.reporter.extend(chunk.findings)
        if chunk.batch is not None:
            report.messages += len(chunk.batch)


def _queue_file_alone(path: Path, config_path, report: VerifyReport) -> None:
    from rmqtool.engine.opening import load_config
    from rmqtool.engine.reader import open_reader

    cfg = load_config(config_path)
    size = path.stat().st_size
    file_size = cfg.mappedFileSizeConsumeQueue if "mappedFileSizeConsumeQueue" in cfg.given else size
    placed = place_in_store(path)
    if placed is None:  # a copy: no name or place to hold it to
        if size != file_size:
            report.reporter.add(Finding(str(path), 0, f"{size} bytes, not mappedFileSizeConsumeQueue={file_size}",
                                        abs(size - file_size), structure=CONSUMEQUEUE, kind=rules.FILE_SIZE))
    else:
        report.reporter.extend(f for f in rules.file_findings(path.parent, file_size) if f.file == str(path))
    start = parse_offset_name(path.name)
    qoffs, entries = queue_file_entries(SegmentFile(path, start or 0, size))
    report.queue_entries += len(entries)
    if placed is None or start is None or not rules.is_queue_id(path.parent.name):
        report.notes.append(f"{path}: not at its place in a store (consumequeue/<topic>/<queueId>/<offset>): its "
                            "entries are not checked against the records they point at")
        return
    reader = open_reader(placed[1], config_path)
    log_start = reader.segments[0].start if reader.segments else 0
    live = entries["commitLogOffset"] >= log_start  # entries below the log's start expired with it
    _entries_against_records(reader, path.parent, qoffs[live], entries[live], report.collected,
                             levels=reader.config.delay_levels_ms)


def _index_file_alone(path: Path, config_path, report: VerifyReport) -> None:
    from rmqtool.engine.opening import load_config

    cfg = load_config(config_path)
    view = _open_index(IndexFiles(cfg, cfg.given), path, report)
    if view is not None:
        _index_file_rules(view, report)


def _checkpoint_alone(path: Path, config_path, report: VerifyReport) -> None:
    from rmqtool.files.segments import read_file
    from rmqtool.structures.checkpoint.recognize import checkpoint_refusal

    buf = read_file(path)
    reason = checkpoint_refusal(buf)
    if reason is not None:
        report.reporter.add(Finding(str(path), 0, f"not a checkpoint the broker can read: {reason}", len(buf),
                                    structure=CHECKPOINT, kind="checkpoint-unreadable"))


_FILE_CHECKS = {"commitlog segment": _segment_alone, "consume-queue file": _queue_file_alone,
                "index file": _index_file_alone, "checkpoint": _checkpoint_alone}
