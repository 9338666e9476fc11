"""The consume queues checked against the log, in both directions, a window of records at a time.

Every entry must point at a record of its own topic, queue and queue offset, of its size and tagsCode;
every record that belongs in a queue must have its entry; the records of a queue, in log order, carry
queue offsets one after another (a jump over some is a gap: the records that held them were lost from
the log, and a queue, which numbers its entries by position as the broker's ConsumeQueue appends them,
cannot match the records after it, however it is rebuilt). Entries are written in log order, so each
queue is read through a cursor that takes, window by window, its entries pointing below the window's
end. An entry out of that order (one whose commitLogOffset was damaged) must not hold back the
healthy entries after it: an entry at or past the window's end whose next entry points below it is
taken with the window, and judged once the log's end is known: past it, or against the record it
points at (read alone).

It reads of the store (`StoreView`) its queues (`consume_queue(topic, qid)`: chunks of (queue offsets,
entries) by the broker's reading rule), `segments` and `segment_for(offset)`; of the report (`CheckReport`)
`queue_keys` ((topic, queue id) -> the number the log's windows give the queue), adding to `queue_entries`
and `collected`; of a window, `end` and per record `offset`, `size`, `qkey`, `qoffset`, `tags`, `in_cq`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rmqtool.files.paths import parse_offset_name
from rmqtool.files.segments import SegmentFile
from rmqtool.report import CONSUMEQUEUE, ERROR, CollectSink, Finding
from rmqtool.structures import consumequeue
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.window import Window
from rmqtool.structures.consumequeue import rules
from rmqtool.structures.consumequeue.queues import MapCache, queue_file_entries
from rmqtool.structures.view import CheckReport, Opener, StoreView

QUEUE_OFFSET_GAP = "queue-offset-gap"  # a queue's records, in log order, skip queue offsets


class QueueCursor:
    """One consume queue's entries (by the broker's reading rule), taken in log order."""

    def __init__(self, reader: StoreView, topic: str, queue_id: int, log_min: int) -> None:
        self.files = iter(reader.consume_queue(topic, queue_id))
        self.path = reader.queues.location(topic, queue_id)
        self.log_min = log_min
        self.qoffs = np.zeros(0, dtype=np.int64)
        self.entries = np.zeros(0, dtype=consumequeue.entry_dtype())
        self.done = False

    def take(self, end: int | None) -> tuple[np.ndarray, np.ndarray]:
        """(queue offsets, entries) of the next entries pointing below `end` (all that are left: None),
        with any entry out of log order among them: one at or past `end` whose next entry is below it."""
        while True:
            offs = self.entries["commitLogOffset"]
            stop = len(offs) if end is None else _held_back(offs, end)
            if stop >= len(offs) - 1 and not self.done and self._next_file():
                continue  # the last entry held (or none): its successor decides, from the next file
            break
        q, e = self.qoffs[:stop], self.entries[:stop]
        self.qoffs, self.entries = self.qoffs[stop:], self.entries[stop:]
        live = e["commitLogOffset"] >= self.log_min  # entries below the log's start expired with it
        return q[live], e[live]

    def _next_file(self) -> bool:
        """The next file's entries appended to those left (False: no file is left)."""
        for qoffs, entries in self.files:
            if len(entries):
                self.qoffs = np.concatenate([self.qoffs, qoffs])
                self.entries = np.concatenate([self.entries, entries])
                return True
        self.done = True
        return False


def _held_back(offs: np.ndarray, end: int) -> int:
    """The first position whose entry, and the entry after it, point at or past `end` (len(offs): none);
    the last entry is held back when it points at or past `end`."""
    past = offs >= end
    held = past & np.append(past[1:], True)
    return int(np.argmax(held)) if held.any() else len(offs)


class QueueChecker:
    """Every consume queue checked against the windows of the log, in both directions."""

    def __init__(self, reader: StoreView, report: CheckReport) -> None:
        self.reader, self.report, self.sink = reader, report, report.collected
        self.keys: dict[tuple[str, int], int] = report.queue_keys
        log_min = reader.segments[0].start if reader.segments else 0
        self.cursors = {(t, q): QueueCursor(reader, t, q, log_min) for t in reader.topics()
                        for q in reader.queue_ids(t)}
        self.stray: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}  # entries out of log order
        self.last: dict[int, int] = {}  # queue key -> the queue offset of its last record read

    def check(self, w: Window) -> None:
        names = {k: tq for tq, k in self.keys.items()}
        self._gaps(w, names)  # first: a gap reads before the mismatches it causes
        seen = np.zeros(len(w.offset), dtype=bool)
        for tq, cursor in self.cursors.items():
            qoffs, entries = cursor.take(w.end)
            if len(entries):
                self._match(w, tq, cursor.path, qoffs, entries, seen)
        missing = np.flatnonzero(w.in_cq & ~seen)
        for qkey in np.unique(w.qkey[missing]).tolist():
            path = self._path(*names[qkey])
            self.sink.add_each(path, "record-without-entry", missing[w.qkey[missing] == qkey], lambda i, path=path: (
                rules.entry_finding(path, int(w.qoffset[i]), f"record at {int(w.offset[i])} (queue offset "
                                    f"{int(w.qoffset[i])}) has no consume-queue entry", "record-without-entry")))

    def _path(self, topic: str, qid: int) -> str:
        cursor = self.cursors.get((topic, qid))
        return cursor.path if cursor is not None else self.reader.queues.location(topic, qid)

    def _gaps(self, w: Window, names: dict[int, tuple[str, int]]) -> None:
        """Each queue's records in the window against the one before them in the log: a queue offset past the
        next one is a gap (a queue's first record may start anywhere: the log's head may have expired)."""
        rows = np.flatnonzero(w.in_cq)
        if not len(rows):
            return
        rows = rows[np.argsort(w.qkey[rows], kind="stable")]  # by queue, in log order within each
        keys, qoffs = w.qkey[rows], w.qoffset[rows]
        first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        before = np.r_[np.int64(0), qoffs[:-1]]
        before[first] = [self.last.get(k, q - 1) for k, q in zip(keys[first].tolist(), qoffs[first].tolist(),
                                                                 strict=True)]
        self.last.update(zip(keys[np.r_[first[1:] - 1, len(keys) - 1]].tolist(),
                             qoffs[np.r_[first[1:] - 1, len(keys) - 1]].tolist(), strict=True))
        for i in np.flatnonzero(qoffs > before + 1).tolist():
            topic, qid = names[int(keys[i])]
            self.sink.add(gap_finding(self._path(topic, qid), int(before[i]), int(qoffs[i]), int(w.offset[rows[i]])))

    def _match(self, w: Window, tq: tuple[str, int], path: str, qoffs: np.ndarray, entries: np.ndarray,
               seen: np.ndarray) -> None:
        """Entries against the window's records; marks in `seen` the records they rightly point at, and
        the records whose entry points where no record starts (that entry is the one finding)."""
        self.report.queue_entries += len(entries)
        key = self.keys.get(tq, -1)
        target = entries["commitLogOffset"]
        where = np.minimum(np.searchsorted(w.offset, target), max(len(w.offset) - 1, 0))
        found = (w.offset[where] == target) if len(w.offset) else np.zeros(len(entries), dtype=bool)
        stray = ~found & (target >= w.end)  # out of log order: judged when the log's end is known
        if stray.any():
            self._keep_stray(tq, qoffs[stray], entries[stray])
        nowhere = np.flatnonzero(~found & ~stray)
        self.sink.add_each(path, "entry-without-record", nowhere, lambda i: rules.entry_finding(
            path, int(qoffs[i]), f"entry {int(qoffs[i])} points at {int(target[i])}, where no record starts",
            "entry-without-record"))
        if not found.all():  # their records are named by these entries' findings
            seen[(w.qkey == key) & np.isin(w.qoffset, qoffs[~found])] = True
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

    def _keep_stray(self, tq: tuple[str, int], qoffs: np.ndarray, entries: np.ndarray) -> None:
        held = self.stray.get(tq)
        self.stray[tq] = (qoffs, entries) if held is None else \
            (np.concatenate([held[0], qoffs]), np.concatenate([held[1], entries]))

    def _lost_in(self, offset: int) -> str:
        """": segment NAME holds no record there (lost)" when a segment file spans `offset`: the record the entry
        names was lost from that segment (zeroed, cut or torn)."""
        seg = self.reader.segment_for(offset)
        return f": segment {seg.path.name} holds no record there (lost)" if seg is not None and \
            seg.start <= offset < seg.end else ""

    def finish(self, end: int) -> None:
        """Entries left after the last window point past the end of the log; those out of log order too,
        or else are read against the record they point at."""
        for tq, cursor in self.cursors.items():
            qoffs, entries = cursor.take(None)
            self.report.queue_entries += len(entries)
            self._keep_stray(tq, qoffs, entries)
        for tq, (qoffs, entries) in self.stray.items():
            path = self.cursors[tq].path
            target = entries["commitLogOffset"]
            past = target >= end
            self.sink.add_each(path, "entry-past-log-end", np.flatnonzero(past), lambda i, q=qoffs, t=target, p=path:
                               rules.entry_finding(p, int(q[i]), f"entry {int(q[i])} points at {int(t[i])}, past "
                                                  f"the end of the log ({end}){self._lost_in(int(t[i]))}",
                                                  "entry-past-log-end"))
            entries_against_records(self.reader, path, qoffs[~past], entries[~past], self.sink,
                                    levels=self.reader.config.delay_levels_ms, queue=tq)
        self.stray = {}
        for f in rules.store_findings(self.reader):
            if f.kind == rules.FILE_PAST_END:
                past_end_entries(self.reader, Path(f.file), self.sink)


def gap_finding(path: str, before: int, qoffset: int, at: int) -> Finding:
    """The record at commitlog offset `at`, of queue offset `qoffset`, follows its queue's record `before` in the
    log: the queue offsets between have no record. At the byte of the first of them in the queue (where a
    rebuild puts the record at `at`), covering their entries."""
    skipped = f"queue offset {before + 1} has" if qoffset == before + 2 else \
        f"queue offsets {before + 1}..{qoffset - 1} have"
    return Finding(str(path), consumequeue.byte_of(before + 1),
                   f"{skipped} no record: the record at {at} (queue offset {qoffset}) follows the queue's record "
                   f"{before} in the log (the records between are lost or damaged); entries are numbered by "
                   "position, so no rebuild of the queue matches the records from here on: they must be appended to "
                   "the log again",
                   consumequeue.byte_of(qoffset - before - 1), ERROR, CONSUMEQUEUE, QUEUE_OFFSET_GAP)


def past_end_entries(reader: StoreView, path: Path, sink: CollectSink) -> None:
    """The entries of a queue file past its queue's end (`rules.FILE_PAST_END`), which a read by queue
    offset still serves, against the records they point at: each must be the record of its own topic,
    queue and queue offset, of its size (a file copied to another name is not)."""
    qoffs, entries = queue_file_entries(SegmentFile(path, int(path.name), path.stat().st_size))
    entries_against_records(reader, path.parent, qoffs, entries, sink, " (past the queue's end)")


def entries_against_records(reader: StoreView, folder: str | Path, qoffs: np.ndarray, entries: np.ndarray,
                            sink: CollectSink,
                            where: str = "", levels: list[int] | None = None,
                            queue: tuple[str, int] | None = None) -> None:
    """Entries of the queue at `folder` (consumequeue/<topic>/<queueId>, or where another form keeps `queue`,
    its (topic, queue id)) against the records they point at, one record read each: each must be the record
    of its own topic, queue and queue offset, of its size (and, given the delay `levels`, of its tagsCode).
    `where` says which entries they are, in each reason."""
    topic, qid = queue or (Path(folder).parent.name, int(Path(folder).name))
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


def check_file(path: Path, opener: Opener, report: CheckReport, root: Path | None) -> None:
    """One queue file alone: its name and size and, at its place in a store (under `root`), its entries
    against the records they point at. A copy elsewhere is held to `mappedFileSizeConsumeQueue` when given."""
    cfg = opener.config
    size = path.stat().st_size
    file_size = cfg.mappedFileSizeConsumeQueue if "mappedFileSizeConsumeQueue" in cfg.given else size
    if root is None:  # a copy: no name or place to hold it to
        if size != file_size:
            report.reporter.add(Finding(str(path), 0, f"{size} bytes, not mappedFileSizeConsumeQueue={file_size}",
                                        abs(size - file_size), structure=CONSUMEQUEUE, kind=rules.FILE_SIZE))
    else:
        report.reporter.extend(f for f in rules.file_findings(path.parent, file_size) if f.file == str(path))
    start = parse_offset_name(path.name)
    qoffs, entries = queue_file_entries(SegmentFile(path, start or 0, size))
    report.queue_entries += len(entries)
    if root is None or start is None or not rules.is_queue_id(path.parent.name):
        report.notes.append(f"{path}: not at its place in a store (consumequeue/<topic>/<queueId>/<offset>): its "
                            "entries are not checked against the records they point at")
        return
    reader = opener.reader(root)
    log_start = reader.segments[0].start if reader.segments else 0
    live = entries["commitLogOffset"] >= log_start  # entries below the log's start expired with it
    entries_against_records(reader, path.parent, qoffs[live], entries[live], report.collected,
                            levels=reader.config.delay_levels_ms)
