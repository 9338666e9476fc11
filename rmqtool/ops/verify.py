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

from rmqtool.engine.opening import load_config
from rmqtool.engine.reader import StoreReader, open_reader
from rmqtool.engine.recognition import require_file
from rmqtool.errors import RmqError
from rmqtool.report import ERROR, STORE, WARNING, CollectSink, Finding, Reporter
from rmqtool.structures.commitlog.window import Window
from rmqtool.structures.consumequeue import queue_keys, queue_of_key
from rmqtool.structures.registry import FILE_OWNERS, REGISTRY, file_owner, place_in_store

WINDOW_RECORDS = 1 << 19  # records held at once
REPORT_CAP = 100  # findings of one kind for one file before they are summed up in one more


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


def verify_store(reader: StoreReader, *, every: bool = False) -> VerifyReport:
    """Every structure's checks: each registered checker fed the log's windows, then each one's file rules.
    `every` lists every finding (else REPORT_CAP of one kind per file, then one "N more like" row)."""
    report = VerifyReport(collected=CollectSink(cap=None if every else REPORT_CAP))
    sink = report.collected
    checkers = [c for s in REGISTRY if (c := s.log_checker(reader, report))]
    end = reader.segments[0].start if reader.segments else 0
    for window in record_windows(reader, report, report.queue_keys):
        for checker in checkers:
            checker.check(window)
        end = window.end
        del window  # one window held at a time: this one goes before the next is built
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
    from rmqtool.structures.consumequeue.dispatchkernel import dispatch_records  # start-up: numba; one file needs none

    levels = np.asarray(reader.config.delay_levels_ms, dtype=np.int64)
    parts: list[tuple] = []
    held, file = 0, None
    for chunk in reader.scan(verify_crc=True):
        report.reporter.extend(chunk.findings)
        b = chunk.batch
        if b is None or not len(b):
            continue
        if parts and (b.file != file or held + len(b) > WINDOW_RECORDS):
            window, parts, held = _window(parts), [], 0  # the parts go before the window is used
            yield window
            del window
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


def verify_path(path: str | os.PathLike, config_path=None, *, every: bool = False) -> VerifyReport:
    """A store root verified whole, or one store file alone (`verify_file`)."""
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
    file_owner(kind).check_file(path, _Opener(config_path), report)
    report.collected.close()
    report.findings.sort(key=lambda f: (f.file, f.offset))
    return report


class _Opener:
    """What a structure opens a lone file with (`Structure.check_file`): the settings, and store readers."""

    def __init__(self, config_path) -> None:
        self.config_path = config_path

    @property
    def config(self):
        return load_config(self.config_path)

    def reader(self, path: Path) -> StoreReader:
        return StoreReader(path, self.config_path)
