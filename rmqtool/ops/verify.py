"""fsck for a store, read-only, in both directions, in memory bounded by a window of the log.

The rules are the structures': each registered structure's log checker (`Structure.log_checker`: the
consume queues' entries against the records and back, the checkpoint's times against the newest
record) is fed the log's good records window by window, then each structure's own file rules run
(`Structure.file_findings`); one file alone is its owner's `check_file`. This module walks the log
(the scanner's findings are the commitlog's: length, magic, body CRC, physicalOffset, blank markers,
a garbage tail), collects, caps and sorts the findings. `abort` is a warning.

The log is read window by window (a segment, or at most `WINDOW_RECORDS` records of one); checkers
read their entries through cursors that advance in step with the log, since queues and index are
written in log order. So memory holds one window of records, one consume-queue file per queue, one
index file and the window's index entries, whatever the store's size.
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
from rmqtool.files.segments import release_pages
from rmqtool.report import ERROR, INDEX, STORE, WARNING, CollectSink, Finding, Reporter
from rmqtool.structures import FILE_OWNERS, REGISTRY, file_owner, index, place_in_store
from rmqtool.structures.consumequeue import queue_keys, queue_of_key
from rmqtool.structures.index.check import entry_finding
from rmqtool.structures.index.structure import INDEX_FILE_KIND

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
    log_end: int = 0  # where the log's good records end (a store checked whole)
    collected: CollectSink = field(default_factory=lambda: CollectSink(cap=REPORT_CAP))
    file: str | None = None  # the one file checked alone (None: a store)
    file_kind: str | None = None  # what that file is: the `file_kind` of a registered structure
    notes: list[str] = field(default_factory=list)  # how the file was read, for a person (stderr)
    queue_keys: dict[tuple[str, int], int] = field(default_factory=dict)  # (topic, queue): its number in windows

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
        """Every finding found, listed or not, per (kind, severity): an "N more like" row counts N."""
        out: Counter[tuple[str, str]] = Counter()
        for f in self.findings:
            out[(f.kind, f.severity)] += f.count
        return out + self.unlisted

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


def verify_store(reader: StoreReader, *, every: bool = False) -> VerifyReport:
    """Every structure's checks: each registered checker fed the log's windows, then each one's file rules.
    `every` lists every finding (else REPORT_CAP of one kind per file, then one "N more like" row)."""
    report = VerifyReport(collected=CollectSink(cap=None if every else REPORT_CAP))
    sink = report.collected
    checkers = [c for s in REGISTRY if (c := s.log_checker(reader, report))]
    if reader.config.messageIndexEnable:  # the index's checker, until the index structure offers it
        log_min = reader.segments[0].start if reader.segments else 0
        checkers.append(_IndexCursor(reader, log_min, report, sink))
    end = reader.segments[0].start if reader.segments else 0
    for window in record_windows(reader, report, report.queue_keys):
        for checker in checkers:
            checker.check(window)
        end = window.end
    report.log_end = end
    for checker in checkers:
        checker.finish(end)
    for s in REGISTRY:  # after the walk: queues are read
        report.reporter.extend(s.file_findings(reader))
    sink.close()
    if reader.abort_present():
        report.reporter.add(Finding(str(reader.paths.abort), 0, "abort file present: the last writer did not shut "
                                       "down cleanly (recovery will run)", 0, WARNING, STORE, "abort-present"))
    report.findings.sort(key=lambda f: (f.file, f.offset))
    return report


def record_windows(reader: StoreReader, report: VerifyReport, keys: dict[tuple[str, int], int]) -> Iterator[Window]:
    """The log's good records window by window (the scanner's findings go to `report`); `keys`
    numbers each (topic, queue) as it is met."""
    from rmqtool.structures.commitlog.dispatchkernel import (
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
        fields = found.fields
        ids, names = b.topics()
        pairs, which = np.unique(queue_keys(ids, fields[:, D_QUEUE_ID]), return_inverse=True)
        table = np.array([keys.setdefault((names[p >> 32], queue_of_key(p)), len(keys))
                          for p in pairs.tolist()], dtype=np.int64)
        qkey = table[which.ravel()]
        report.messages += len(b)
        held += len(b)
        parts.append((fields[:, D_OFFSET].copy(), fields[:, D_SIZE].copy(), qkey, fields[:, D_QUEUE_OFFSET].copy(),
                      fields[:, D_TAGS_CODE].copy(), fields[:, D_IN_CQ].astype(bool), found.key_hash.copy(),
                      fields[found.key_rec, D_OFFSET].copy(), int(fields[:, D_STORE_TS].max())))
    if parts:
        yield _window(parts)


def _window(parts: list[tuple]) -> Window:
    cols = [np.concatenate([p[k] for p in parts]) for k in range(8)]
    return Window(int(cols[0][-1] + cols[1][-1]), *cols, max(p[8] for p in parts))


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
        self.entries = np.zeros(0, dtype=index.ENTRY_DTYPE)
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


def verify_path(path: str | os.PathLike, config_path=None, *, every: bool = False) -> VerifyReport:
    """A store root verified whole, or one store file alone (`verify_file`)."""
    from rmqtool.engine.reader import open_reader

    if Path(path).is_file():
        return verify_file(Path(path), config_path, every=every)
    return verify_store(open_reader(path, config_path), every=every)


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


def verify_file(path: Path, config_path=None, *, every: bool = False) -> VerifyReport:
    """One store file checked alone, by what verify knows of its structure: a commitlog segment's records
    (length, magic, body CRC, physicalOffset, blank marker, garbage tail) and size; a consume-queue file's
    name and size and, at its place in a store, its entries against the records they point at; an index
    file's size, header and chains; a checkpoint's page. Nothing else of the store is read."""
    kind = file_kind(path)
    report = VerifyReport(file=str(path), file_kind=kind, collected=CollectSink(cap=None if every else REPORT_CAP))
    if kind == INDEX_FILE_KIND:  # the index's file check, until the index structure offers it
        _index_file_alone(path, config_path, report)
    else:
        file_owner(kind).check_file(path, _Opener(config_path), report)
    report.collected.close()
    report.findings.sort(key=lambda f: (f.file, f.offset))
    return report


def _index_file_alone(path: Path, config_path, report: VerifyReport) -> None:
    from rmqtool.engine.opening import load_config

    cfg = load_config(config_path)
    view = _open_index(IndexFiles(cfg, cfg.given), path, report)
    if view is not None:
        _index_file_rules(view, report)


class _Opener:
    """What a structure opens a lone file with (`Structure.check_file`): the settings, and store readers."""

    def __init__(self, config_path) -> None:
        self.config_path = config_path

    @property
    def config(self):
        from rmqtool.engine.opening import load_config

        return load_config(self.config_path)

    def reader(self, path: Path) -> StoreReader:
        return StoreReader(path, self.config_path)
