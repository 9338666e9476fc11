"""The index checked against the log (`verify`), window by window, and one index file checked alone.

Every entry must name a key of the record it points at, every key of every indexed record must be
reachable from its slot, and a file's own rules (`check`: size, header against entries) must hold.
Entries are read through a cursor that advances in step with the log, since files follow the log and
so do the entries of each file; a window's entries, from however many files, are checked against its
keys together (one sort of the keys and one of the reachable entries per window), so memory holds one
index file's map and the window's entries, and many small files cost what one large file does.

A take of the entries below a window's end stops at the first entry from which on none points below
it (the suffix minimum of the offsets, the file's last entry capped by its header's endPhyOffset): in
log order that is the first entry at or past the end, and one entry whose offset was damaged upward
holds back none of those after it. Entries left after the last window point past the end of the log.

`view` is the store being read (`structures.view.StoreView`): `segments` (each with `start`), `config`
(`messageIndexEnable`, `maxHashSlotNum`, `maxIndexNum`), `index_paths()`, `index_files()` and
`paths.index`. `report` is verify's report: `reporter` (add, extend), `collected` (add_each, a capped
sink) and the count `index_entries`. A window offers `end`, `key_hash` and `key_offset`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rmqtool.errors import RmqError
from rmqtool.files.segments import release_pages
from rmqtool.report import ERROR, INDEX, WARNING, Finding
from rmqtool.structures import index
from rmqtool.structures.commitlog.window import Window
from rmqtool.structures.index import chain
from rmqtool.structures.index.check import entry_finding, file_size, header_findings
from rmqtool.structures.index.files import IndexFiles, IndexFileView
from rmqtool.structures.settings import StoreSettings
from rmqtool.structures.view import CheckReport, StoreView

_HASH_BITS = 31  # an index keyHash is the absolute value of a Java int hash
_SPAN_BITS = 63 - _HASH_BITS  # a window's pairs are matched as (offset - its first key's) << 31 | keyHash: a
# window lies within one segment, whose size is a Java int, so its offsets span less than 2^31
_REACH_CHUNK = 1 << 20  # index entries walked between two page releases
_STEP = 1 << 16  # entries looked at a time for where a take stops
_NONE_BELOW = np.iinfo(np.int64).max
PAST_LOG_END = "index-file-past-log-end"


def interrupted_past(begin_phy: int, held: int, log_end: int) -> bool:
    """Whether a file holding no entry begins at or past the log's end: a file a write rolled to and
    was killed before it put a key (a healthy new file begins at its predecessor's last key, in the log)."""
    return held == 0 and begin_phy > 0 and begin_phy >= log_end


def past_end_finding(path: str, begin_phy: int, log_end: int) -> Finding:
    return Finding(path, index.BEGIN_PHY_AT, f"index file {Path(path).name} begins at {begin_phy}, past the end of "
                   f"the log ({log_end}): left by an interrupted write", 16, ERROR, INDEX, PAST_LOG_END)


@dataclass
class _Slice:
    """Consecutive entries of one index file (entry numbers first+1 ..), copied out of its map."""

    path: str
    hash_slots: int  # of its file: where its entries sit
    bounds: tuple[int, int, int]  # its file's beginPhyOffset, endPhyOffset and entries held
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


class _Stops:
    """Where a take of one file's entries below an end stops: the first position whose suffix minimum
    of offsets is at or past it. Block minima are kept, so a take reads only the pages up to its stop."""

    def __init__(self, phy: np.ndarray, end_phy: int, passed: Callable[[int, int], None] | None = None) -> None:
        self.phy, self.n = phy, len(phy)
        self.tail = min(int(phy[-1]), end_phy) if self.n else 0  # the last entry: the header's end bounds it
        mins = np.zeros(-(-self.n // _STEP), dtype=np.int64)
        for lo in range(0, self.n, _REACH_CHUNK):  # a chunk at a time, its pages given back after
            part = phy[lo : lo + _REACH_CHUNK]
            mins[lo // _STEP : lo // _STEP + -(-len(part) // _STEP)] = np.minimum.reduceat(part, np.arange(
                0, len(part), _STEP))
            if passed is not None:
                passed(lo, lo + len(part))
        if self.n:
            mins[-1] = min(int(mins[-1]), self.tail)
        self.after = np.r_[np.minimum.accumulate(mins[::-1])[::-1], _NONE_BELOW]  # suffix minima of blocks

    def stop(self, start: int, end: int | None) -> int:
        if end is None:
            return self.n
        for b in range(start // _STEP, len(self.after) - 1):
            if self.after[b + 1] < end:
                continue  # a later block points below the end: no entry of this one stops the take
            lo = b * _STEP
            part = self.phy[lo : lo + _STEP].astype(np.int64)
            if lo + len(part) == self.n:
                part[-1] = self.tail
            suffix = np.minimum(np.minimum.accumulate(part[::-1])[::-1], self.after[b + 1])
            past = np.flatnonzero(suffix[max(start - lo, 0) :] >= end)
            if past.size:
                return max(start, lo) + int(past[0])
        return self.n


class IndexChecker:
    """The index files' entries against the log's windows, one file at a time, pages of entries already
    passed given back."""

    def __init__(self, view: StoreView, report: CheckReport) -> None:
        self.view, self.report, self.sink = view, report, report.collected
        self.log_min = view.segments[0].start if view.segments else 0
        self.log_limit = view.segments[-1].end if view.segments else 0  # no record starts at or past it
        self.paths = iter(view.index_paths())
        self.files: IndexFiles = view.index_files()
        self.buf = None
        self.entries = np.zeros(0, dtype=index.ENTRY_DTYPE)
        self.reach = np.zeros(0, dtype=bool)
        self.stops = _Stops(np.zeros(0, dtype=np.int64), 0)
        self.hash_slots = 0
        self.bounds = (0, 0, 0)
        self.path = ""
        self.at = 0
        self.empty: list[tuple[str, int]] = []  # (path, beginPhyOffset) of each file holding no entry

    def _next_file(self) -> bool:
        view = None
        while view is None:  # a file that cannot be read is a finding, and the next one is taken
            path = next(self.paths, None)
            if path is None:
                return False
            view = open_index(self.files, path, self.report)
        self.entries, self.reach = file_rules(view, self.report, self.log_limit)
        self.bounds = (int(view.header["beginPhyOffset"]), int(view.header["endPhyOffset"]), len(self.entries))
        if not len(self.entries):
            self.empty.append((str(path), int(view.header["beginPhyOffset"])))
        self.buf, self.hash_slots = view.buf, view.hash_slots
        self.stops = _Stops(self.entries["phyOffset"], int(view.header["endPhyOffset"]),
                            lambda lo, hi: release_pages(self.buf, self._at(lo), self._at(hi)))
        self.path, self.at = str(path), 0
        return True

    def _at(self, i: int) -> int:
        return index.entry_position(self.hash_slots, i + 1)

    def _take(self, end: int | None) -> Iterator[_Slice]:
        """One slice per file of the next entries below `end` (None: all that are left)."""
        while True:
            if self.at >= len(self.entries) and not self._next_file():
                return
            stop = self.stops.stop(self.at, end)
            part = self.entries[self.at : stop]
            yield _Slice(self.path, self.hash_slots, self.bounds, self.at, part["keyHash"].astype(np.int64),
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
        lost = ~_member(want, _concat([s.pairs(base)[s.reach] for s in slices]))
        at = 0
        for s in slices:
            bad = np.flatnonzero(~known[at : at + len(s.key_hash)])
            if len(bad):
                self._wrong_key(s, bad, known[at : at + len(s.key_hash)], w, lost)
            at += len(s.key_hash)
        lost_at = w.key_offset[lost]
        folder = str(self.view.paths.index)
        self.sink.add_each(folder, "key-not-indexed", np.arange(len(lost_at)), lambda i: Finding(
            folder, int(lost_at[i]), f"a key of the record at {int(lost_at[i])} is not in the index", 0,
            structure=INDEX, kind="key-not-indexed"))

    def _wrong_key(self, s: _Slice, bad: np.ndarray, known: np.ndarray, w: Window, lost: np.ndarray) -> None:
        """Entries naming no key of their record. One pointing past every segment, between two good entries
        (the header's begin or end for the first or last of its file), whose hash is a key not indexed of a
        record between them, is that key's entry with its phyOffset damaged: one finding names both (and
        the key is not reported again)."""
        owner: dict[int, int] = {}
        begin_phy, end_phy, count = s.bounds
        for i in bad.tolist():
            if s.phy_offset[i] < self.log_limit:
                continue
            lower = int(s.phy_offset[i - 1]) if i > 0 and known[i - 1] else begin_phy if s.first + i == 0 else None
            upper = int(s.phy_offset[i + 1]) if i < len(known) - 1 and known[i + 1] else \
                end_phy if s.first + i == count - 1 else None
            if lower is not None and upper is not None:
                lo = int(np.searchsorted(w.key_offset, lower, "left"))
                hi = int(np.searchsorted(w.key_offset, upper, "right"))
                near = np.flatnonzero(lost[lo:hi] & (w.key_hash[lo:hi] == s.key_hash[i]))
                if near.size:
                    owner[i] = int(w.key_offset[lo + near[0]])
                    lost[lo + near[0]] = False

        def make(i: int) -> Finding:
            h, phy = s.entry(i)
            why = f"entry {i + 1} (hash {h}) points at {phy}, which holds no such key"
            if i - s.first in owner:
                why = (f"entry {i + 1} (hash {h}) points at {phy}, past the end of the log's segments "
                       f"({self.log_limit}): its phyOffset is damaged (its neighbours say it indexes the record at "
                       f"{owner[i - s.first]})")
            return entry_finding(s.path, s.hash_slots, i + 1, why, "index-entry-wrong-key")

        self.sink.add_each(s.path, "index-entry-wrong-key", bad + s.first, make)

    def finish(self, end: int) -> None:
        """Entries past the end of the log: recovery cut the log and kept the index, as the broker does; and
        files holding no entry that begin past it."""
        for s in self._take(None):
            self.sink.add_each(s.path, "index-entry-stale", s.rows(), lambda i, s=s: entry_finding(
                s.path, s.hash_slots, i + 1, f"entry {i + 1} points at {s.entry(i)[1]}, past the end "
                f"of the log ({end}): a stale entry lookups skip", "index-entry-stale", WARNING))
        for path, begin in self.empty:
            if interrupted_past(begin, 0, end):
                self.report.reporter.add(past_end_finding(path, begin, end))


def open_index(files: IndexFiles, path: Path, report: CheckReport) -> IndexFileView | None:
    """The file's view; None, after a finding, for a file its size does not fit (a cut file)."""
    try:
        return files.index_file(path)
    except RmqError:
        cfg = files.config
        report.reporter.add(file_size(str(path), os.stat(path).st_size, cfg.maxHashSlotNum, cfg.maxIndexNum))
        return None


def file_rules(view: IndexFileView, report: CheckReport, log_limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """An index file's own rules: its header against its entries, and every entry reachable from its slot
    (`log_limit`: see `check.header_findings`). Returns the entries it holds (a count past them adds no
    empty ones) and which of them are reachable."""
    path = str(view.path)
    entries = view.entries()
    found, held = header_findings(path, view.header, entries, view.index_num, log_limit)
    report.reporter.extend(found)
    report.index_entries += held
    reach = _reachable(view)[:held]
    report.collected.add_each(path, "index-entry-unreachable", np.flatnonzero(~reach), lambda i: entry_finding(
        path, view.hash_slots, i + 1, f"entry {i + 1} cannot be reached from its slot (broken chain)",
        "index-entry-unreachable"))
    return entries[:held], reach


def check_file(path: Path, config: StoreSettings, report: CheckReport) -> None:
    """One index file alone (`verify FILE`): its size, header and chains; `config` the settings it is read with
    (`maxHashSlotNum`, `maxIndexNum`, and `given`, the keys a broker.conf set)."""
    view = open_index(IndexFiles(config, config.given), path, report)
    if view is not None:
        file_rules(view, report)


def _reachable(view: IndexFileView) -> np.ndarray:
    """Which entries a lookup from the store's first moment meets (`chain.walk`'s rule), in one
    backward pass whose passed pages are given back as it goes (resident memory stays a chunk)."""
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


def _member(values: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Which of `values` are in `among` (one sort and a binary search: faster than np.isin here). Keys and
    entries come in log order, nearly sorted already, which the stable (merge) sort passes through in a
    fraction of the quicksort's time."""
    if not len(among):
        return np.zeros(len(values), dtype=bool)
    ordered = np.sort(among, kind="stable")
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    return ordered[at] == values
