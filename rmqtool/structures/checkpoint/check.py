"""The checkpoint checked: its page alone (`verify FILE`), its presence and its flush times against the
newest record of the log.

It reads of the store `paths.checkpoint`, of a window `last_store_ts` (the newest store time of its records)
and `offset` (its records), and adds to the report's `reporter`.
"""

from __future__ import annotations

from pathlib import Path

from rmqtool.files.segments import read_file
from rmqtool.report import CHECKPOINT, ERROR, WARNING, Finding
from rmqtool.structures import checkpoint
from rmqtool.structures.checkpoint.recognize import checkpoint_refusal
from rmqtool.structures.commitlog.window import Window
from rmqtool.structures.view import CheckReport, StoreView

MISSING = "checkpoint-missing"  # a log with records and no checkpoint file beside it
AHEAD = "checkpoint-ahead"  # a flush time after the newest record
UNREADABLE = "checkpoint-unreadable"  # a page the broker cannot read


class CheckpointChecker:
    """A log with records and no checkpoint (an error), and flush times after the newest record of the log:
    what they name was cut or is gone (warnings). A log without records needs no checkpoint: there is nothing
    for a recovery to start from (a broker writes one at its first start)."""

    def __init__(self, reader: StoreView, report: CheckReport) -> None:
        self.reader, self.report = reader, report
        self.last_ts: int | None = None  # None: no record was read

    def check(self, window: Window) -> None:
        if len(window.offset):
            self.last_ts = max(self.last_ts or 0, int(window.last_store_ts))

    def finish(self, end: int) -> None:
        path = self.reader.paths.checkpoint
        if self.last_ts is None:
            return
        if not path.exists():
            self.report.reporter.add(missing_finding(str(path)))
            return

        buf = read_file(path)
        reason = checkpoint.refusal(buf)  # what every reader refuses (its times may still be garbage: ahead below)
        if reason is not None:  # the broker cannot read it: a finding the reset mends, not a refusal of the store
            self.report.reporter.add(Finding(str(path), 0, f"not a checkpoint the broker can read: {reason}",
                                             len(buf), structure=CHECKPOINT, kind=UNREADABLE))
            return
        for f in ahead_findings(str(path), checkpoint.decode(buf), self.last_ts):
            self.report.reporter.add(f)


def missing_finding(path: str) -> Finding:
    """The checkpoint file is not there: after a crash the broker's recovery reads its times as 0, walks the
    log from its first segment and drops every index file (each ends after index time 0)."""
    return Finding(path, 0, "the checkpoint file is missing: the broker's crash recovery has no start point (after "
                   "a crash it walks the whole log and drops every index file)", 0, ERROR, CHECKPOINT, MISSING)


def ahead_findings(path: str, cp: checkpoint.Checkpoint, last_ts: int) -> list[Finding]:
    """One warning per 4.9 flush time of the commitlog and the queues after `last_ts`, at its long."""
    physic, logics = cp.physicMsgTimestamp, cp.logicsMsgTimestamp
    out = []
    if physic > last_ts:
        out.append(_ahead(path, "physicMsgTimestamp", f"physicMsgTimestamp {physic} is after the newest record "
                          f"({last_ts}): records flushed before the checkpoint are gone (or recovery cut them)"))
    if logics > last_ts:
        out.append(_ahead(path, "logicsMsgTimestamp", f"logicsMsgTimestamp {logics} is after the newest record "
                          f"({last_ts})"))
    return out


def _ahead(path: str, name: str, reason: str) -> Finding:
    return Finding(path, checkpoint.LAYOUT.offset(name), reason, checkpoint.LAYOUT.width(name), WARNING, CHECKPOINT,
                   AHEAD)


def check_file(path: Path, report: CheckReport) -> None:
    """The page alone: a checkpoint the broker can read (its size, its flush times epoch milliseconds)."""
    buf = read_file(path)
    reason = checkpoint_refusal(buf)
    if reason is not None:
        report.reporter.add(Finding(str(path), 0, f"not a checkpoint the broker can read: {reason}", len(buf),
                                    structure=CHECKPOINT, kind=UNREADABLE))
