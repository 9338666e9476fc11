"""The commitlog as the registry lists it: segments of records, the log every other structure points into.

The registry builds it with the log's other implementations (the DLedger log), whose folders import
this one: a file whose head one of them recognises is a commitlog segment too."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rmqtool.report import Finding
from rmqtool.structures.commitlog.expiry import Expiry, expired_segments
from rmqtool.structures.commitlog.geometry import REFUSED_AT_START, sequence_findings, store_findings
from rmqtool.structures.commitlog.recognize import segment_refusal
from rmqtool.structures.commitlog.repairs import repairs
from rmqtool.structures.commitlog.summary import section
from rmqtool.structures.recoveryplan import CUT, END, LOAD, START, RecoveryContext, RecoveryPlan
from rmqtool.structures.replicas import Comparison, Pair
from rmqtool.structures.structure import Repair, Structure
from rmqtool.structures.view import CheckReport, Opener, StoreView

if TYPE_CHECKING:
    from rmqtool.files.paths import StorePaths

SEGMENT_KIND = "commitlog segment"


class CommitLog(Structure):
    name = "commitlog"
    folder = "commitlog"
    file_kind = SEGMENT_KIND

    def __init__(self, variants: tuple[Structure, ...] = ()) -> None:
        super().__init__()
        self.variants = variants

    @property
    def refused_at_start(self) -> tuple[str, ...]:
        return REFUSED_AT_START

    def recognise(self, head: bytes, size: int) -> str | None:
        refusal = segment_refusal(head)
        if refusal is None or any(v.recognise(head, size) is None for v in self.variants):
            return None
        return refusal

    def place(self, path: Path) -> Path | None:
        return path.parent.parent if path.parent.name == self.folder else None

    def info(self, view: StoreView, doc: dict) -> tuple[str, dict] | None:
        return "commitlog", section(view)

    def file_findings(self, view: StoreView) -> list[Finding]:
        return store_findings(view)

    def repairs(self, report: CheckReport, view: StoreView) -> list[Repair]:
        return repairs(report.findings, [s.path for s in view.segments], view.config.mappedFileSizeCommitLog,
                       report.log_end)

    def check_file(self, path: Path, opener: Opener, report: CheckReport) -> None:
        """A segment alone: its records (length, magic, body CRC, physicalOffset, blank marker, garbage
        tail) and its size, when configured."""
        reader = opener.reader(path)
        if reader.start_note is not None:
            report.notes.append(reader.start_note)
        report.reporter.extend(sequence_findings(reader.segments, reader.segment_size))
        for chunk in reader.scan(verify_crc=True):
            report.reporter.extend(chunk.findings)
            if chunk.batch is not None:
                report.messages += len(chunk.batch)

    def expired(self, paths: StorePaths, now_ms: int, reserved_hours: float) -> Expiry:
        """The segments the broker's cleanup deletes at `now_ms`, kept for `reserved_hours` (`expiry`)."""
        return expired_segments(paths.commitlog, now_ms, reserved_hours)

    def plan_recovery(self, phase: str, view: StoreView, plan: RecoveryPlan, context: RecoveryContext) -> None:
        """Load: a segment of the wrong size refuses. Start: a missing segment refuses (--thorough: filled).
        End: the broker's walk (or --truncate-to). Cut: its tail past the end."""
        from rmqtool.structures.commitlog import recovery  # start-up: listing the registry loads no numpy

        if phase == LOAD:
            recovery.plan_load(view, plan, self.refusals(self.file_findings(view)))
        elif phase == START:
            recovery.plan_holes(view, plan, context.thorough)
        elif phase == END:
            recovery.plan_end(view, plan, context)
        elif phase == CUT:
            recovery.plan_cut(view, plan, context)

    def apply_recovery(self, view: StoreView, plan: RecoveryPlan, lost: Path | None) -> None:
        """A missing segment is written back as one blank marker."""
        from rmqtool.structures.commitlog.recovery import fill_holes  # start-up: as above

        fill_holes(plan.filled, view.config.mappedFileSizeCommitLog)

    # -- two replicas (`diff`) ------------------------------------------------------------------------
    def pair_refusal(self, a: StoreView, b: StoreView) -> str | None:
        """Different segment sizes, or a segment not at a multiple of the size: a slave names its files as its
        master does."""
        from rmqtool.structures.commitlog.compare import pair_refusal  # start-up: the registry loads no comparer

        return pair_refusal(a, b)

    def compare(self, pair: Pair) -> Comparison | None:
        from rmqtool.structures.commitlog.compare import compare  # start-up: the registry loads no comparer

        return compare(pair)


