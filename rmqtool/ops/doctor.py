"""`doctor`: every structure's check and one plan that mends what they found, its loss counted exactly.

The diagnosis is read-only: the store is checked whole (`verify`: every structure in the registry,
each against the log), the broker's recovery is planned (what it would cut at its next start), and each
structure plans the repairs its findings call for (`Structure.repairs`). The plan is the repairs in the
registry's order of actions (structure.ACTIONS): the log first, what points into it after. A cut of the
log (at a damaged record, or where the broker's recovery ends it) rebuilds the queues and the index and
resets the checkpoint with it, and comes with its ledger (`ops.ledger`): every record lost, counted from
the queue entries and the log's walk, every intact record after it appended again, and every committed
consumer position that moves with the renumbered queues. `ops.repair` carries the plan out as one
transaction.

A damaged record in the log is mended by a cut at it and the intact records after it appended again:
nothing the broker's recovery keeps is lost, and more is kept than it keeps (it keeps nothing after the
cut). A store with damage no repair in place undoes (a missing segment between two others) is named and
left as it is; `salvage --into` writes its intact records into a new store.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rmqtool.engine.opening import Store, open_store
from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.files.paths import is_temporary
from rmqtool.files.swap import JOURNAL, pending_swap, staging_root
from rmqtool.ops.ledger import Ledger, ledger_of_cut
from rmqtool.ops.recovery import plan_recovery
from rmqtool.ops.verify import VerifyReport, verify_store
from rmqtool.structures.commitlog.recovery import filled
from rmqtool.structures.config.positions import Moved, move_positions
from rmqtool.structures.consumequeue.renumber import Renumbering, renumbering
from rmqtool.structures.recoveryplan import RecoveryPlan
from rmqtool.structures.registry import REGISTRY
from rmqtool.structures.structure import (
    CANNOT_MEND,
    CUT_AND_REPACK,
    FINISH_REPAIR,
    REBUILD_INDEX,
    REBUILD_QUEUES,
    RECOVER,
    RESET_CHECKPOINT,
    Repair,
)

HEALTHY, PLAN, UNMENDABLE = "healthy", "plan", "unmendable"
CUTS = (CUT_AND_REPACK, RECOVER)


@dataclass
class Step:
    """One repair of the plan and what it costs: findings it mends, records and bytes it drops (kept in lost/),
    records it keeps by appending them again."""

    repair: Repair
    mends: int = 0
    records_lost: int = 0
    bytes_lost: int = 0
    records_kept: int = 0  # a cut: intact records after it, appended again at new offsets
    bytes_kept: int = 0

    def to_json(self) -> dict:
        return {**self.repair.to_json(), "mends": self.mends, "recordsLost": self.records_lost,
                "bytesLost": self.bytes_lost, "recordsKept": self.records_kept, "bytesKept": self.bytes_kept}


@dataclass
class RepairPlan:
    """What the transaction changes: the cut (None: the log stays), what is rebuilt from the log, the files
    removed, and the ledger of the cut."""

    cut: int | None = None
    rebuild_queues: bool = False
    rebuild_index: bool = False
    reset_checkpoint: bool = False
    remove: list[str] = field(default_factory=list)
    ledger: Ledger | None = None
    positions: list[Moved] = field(default_factory=list)  # committed positions the renumbering moves


@dataclass
class Diagnosis:
    """A store's findings and the plan that mends them."""

    root: Path
    report: VerifyReport
    recovery: RecoveryPlan | None
    steps: list[Step] = field(default_factory=list)
    refused: str | None = None  # why the broker's recovery refuses the store, when it does
    repair: RepairPlan = field(default_factory=RepairPlan)
    salvage: dict | None = None  # a store no repair in place mends: what `salvage --into` would keep

    @property
    def status(self) -> str:
        if any(s.repair.action == CANNOT_MEND for s in self.steps):
            return UNMENDABLE
        return PLAN if self.steps else HEALTHY

    @property
    def interrupted(self) -> bool:
        """A repair stopped after its commit point: finishing it is the whole plan."""
        return any(s.repair.action == FINISH_REPAIR for s in self.steps)

    @property
    def unmendable(self) -> str:
        return next((s.repair.reason for s in self.steps if s.repair.action == CANNOT_MEND), "")

    @property
    def records_lost(self) -> int:
        return sum(s.records_lost for s in self.steps)

    @property
    def bytes_lost(self) -> int:
        return sum(s.bytes_lost for s in self.steps)

    def to_json(self) -> dict:
        r = self.report
        return {"store": str(self.root), "status": self.status, "problems": r.problems, "warnings": r.warnings,
                "byKind": r.by_kind(), "recoveryRefused": self.refused,
                "steps": [s.to_json() for s in self.steps],
                "recordsLost": self.records_lost, "bytesLost": self.bytes_lost,
                "positionsMoved": [m.to_json() for m in self.repair.positions],
                "salvageInto": self.salvage}


def diagnose(root: str | os.PathLike | Store, config=None) -> Diagnosis:
    """Check the store whole and plan what mends it; nothing is written."""
    store = root if isinstance(root, Store) else open_store(root, config)
    pending = pending_swap(store.paths)
    if pending is not None:
        return _interrupted(store, pending)
    reader = StoreReader(store)
    report = verify_store(reader)
    repairs = [r for s in REGISTRY for r in s.repairs(report, reader)]
    cut = any(r.action == CUT_AND_REPACK for r in repairs)  # the broker's cuts cost nothing more than the ledger's
    try:
        recovery: RecoveryPlan | None = plan_recovery(store, count_dispatch=not cut, end_only=cut)
        refused = recovery.refused
    except RmqError as e:  # a store rmqtool does not write (5.x): checked, never recovered
        recovery, refused = None, str(e)
    if recovery is not None and recovery.changes and not refused and \
            not any(r.action in CUTS for r in repairs):
        repairs.append(Repair("commitlog", RECOVER, str(store.paths.commitlog),
                              f"the broker's recovery at its next start: {_recovery_words(recovery)}"))
    repairs = _one_per_action(repairs, recovery)
    diagnosis = Diagnosis(Path(store.root), report, None if refused else recovery, refused=refused)
    if any(r.action == CANNOT_MEND for r in repairs):
        diagnosis.steps = _cost([r for r in repairs if r.action == CANNOT_MEND], report, RepairPlan())
        diagnosis.salvage = {"command": f"rmqtool salvage {store.root} --into NEW", "records": report.messages}
        return diagnosis
    diagnosis.repair = _repair_plan(repairs, report, recovery, reader)
    repairs = _with_rebuilds(repairs, diagnosis.repair, store)
    diagnosis.steps = _cost(repairs, report, diagnosis.repair)
    return diagnosis


def _interrupted(store: Store, pending: dict) -> Diagnosis:
    """A repair that committed and was stopped while it swapped its files in: finishing it is the plan."""
    journal = staging_root(store.paths) / JOURNAL
    step = Step(Repair("store", FINISH_REPAIR, str(journal),
                       f"a repair was stopped after it committed (lost/ folder {pending['lost']}): its "
                       f"{len(pending['parts'])} files and folders are swapped in by the next writer; "
                       "`doctor --apply` finishes it, then checks the store"))
    return Diagnosis(Path(store.root), VerifyReport(), None, [step])


def _repair_plan(repairs: list[Repair], report: VerifyReport, recovery: RecoveryPlan | None,
                 reader: StoreReader) -> RepairPlan:
    """What the transaction for `repairs` changes, with the ledger of its cut."""
    plan = RepairPlan()
    actions = {r.action: r for r in repairs}
    index_on = reader.config.messageIndexEnable
    if CUT_AND_REPACK in actions:
        plan.cut = actions[CUT_AND_REPACK].at or 0
    elif RECOVER in actions and recovery is not None:
        past_end = any(f.kind == "entry-past-log-end" for f in report.findings)
        if recovery.end < recovery.data_end or past_end:
            plan.cut = recovery.end
    whole = plan.cut is not None or RECOVER in actions  # what the broker's recovery would cut or re-dispatch
    plan.rebuild_queues = whole or REBUILD_QUEUES in actions
    plan.rebuild_index = index_on and (whole or REBUILD_INDEX in actions)
    plan.reset_checkpoint = whole or RESET_CHECKPOINT in actions
    if recovery is not None:
        plan.remove = [f for f, _ in recovery.deleted if is_temporary(Path(f).name)]  # unfinished allocations
    if plan.cut is not None:
        size = reader.config.mappedFileSizeCommitLog
        holes = [(s.start, s.start + size) for s in reader.segments if s.start < plan.cut and filled(s.path)]
        plan.ledger = ledger_of_cut(reader, plan.cut, holes)
        offsets = reader.paths.root / "config"
        if offsets.is_dir():
            plan.positions = move_positions(offsets, renumberings(plan.ledger, None, None), write=False)
    return plan


def renumberings(ledger: Ledger, new: dict[tuple[str, int], np.ndarray] | None,
                 ends: dict[tuple[str, int], int] | None) -> dict[tuple[str, int], Renumbering]:
    """Each queue the cut touched, renumbered: `new` (the survivors' new queue offsets, log order) and `ends`
    (each queue's new max) as a repaired store holds them; None: as the plan foresees them, the survivors
    numbered on from the queue's first offset at the cut."""
    out = {}
    empty = np.zeros(0, dtype=np.int64)
    for key in set(ledger.survivors) | set(ledger.lost_entries):
        old = ledger.survivors[key].offsets() if key in ledger.survivors else empty
        lost = ledger.lost_entries.get(key, empty)
        if new is None:
            first = int(min(a.min() for a in (old, lost) if len(a)))
            got, end = first + np.arange(len(old), dtype=np.int64), first + len(old)
        else:
            got, end = new.get(key, empty), ends[key]
        out[key] = renumbering(key[0], key[1], old, got, lost, end)
    return out


def _with_rebuilds(repairs: list[Repair], plan: RepairPlan, store: Store) -> list[Repair]:
    """The plan's repairs with the rebuilds and the reset a cut or a crash brings with it, in action order."""
    have = {r.action for r in repairs}
    why = "the log was cut: dispatched again from it" if plan.cut is not None else \
        "what the broker's recovery would cut or dispatch again: dispatched again from the log"
    added = []
    if plan.rebuild_queues and REBUILD_QUEUES not in have:
        added.append(Repair("consumequeue", REBUILD_QUEUES, str(store.paths.consumequeue), why))
    if plan.rebuild_index and REBUILD_INDEX not in have:
        added.append(Repair("index", REBUILD_INDEX, str(store.paths.index), why))
    if plan.reset_checkpoint and RESET_CHECKPOINT not in have:
        added.append(Repair("checkpoint", RESET_CHECKPOINT, str(store.paths.checkpoint),
                            "write the checkpoint's times again from the newest record"))
    return sorted([*repairs, *added], key=lambda r: r.order)


def remedy(report: VerifyReport, reader: StoreReader) -> list[Repair]:
    """What the structures plan for a finished check's findings, without planning the broker's recovery (for
    `verify` and `recover` to name what is left: the doctor's one line)."""
    return _one_per_action([r for s in REGISTRY for r in s.repairs(report, reader)], None)


def remedy_line(report: VerifyReport, reader: StoreReader, what: str) -> str | None:
    """"`what` left N problems that `rmqtool doctor STORE --apply` mends (rebuild-queues, ...)"; None: none."""
    if not (report.problems or report.warnings):
        return None
    repairs = remedy(report, reader)
    if not repairs:
        return None
    found = f"{report.problems} problems, {report.warnings} warnings"
    if any(r.action == CANNOT_MEND for r in repairs):
        return f"{what} {found}, some no repair in place mends: `rmqtool doctor {reader.paths.root}` names them"
    actions = ", ".join(dict.fromkeys(r.action for r in repairs))
    return f"{what} {found} that `rmqtool doctor {reader.paths.root} --apply` mends ({actions})"


def _one_per_action(repairs: list[Repair], recovery: RecoveryPlan | None) -> list[Repair]:
    """The repairs in the order they run, one per action and target (a cut: the lowest, which takes the others
    with it, and no lower than the broker's recovery point when the damage lies past it)."""
    repairs = sorted(repairs, key=lambda r: (r.order, r.at if r.at is not None else -1))
    out: list[Repair] = []
    for r in repairs:
        if r.action == CUT_AND_REPACK:
            if any(o.action == CUT_AND_REPACK for o in out):
                continue
            if recovery and not recovery.refused and recovery.end < (r.at or 0):  # the broker stops before it
                r = Repair(r.structure, r.action, r.target, r.reason, r.kinds, recovery.end)
        elif r.action == RECOVER and any(o.action in (RECOVER, CUT_AND_REPACK) for o in out):
            continue  # a cut recovers the store as well (the broker's rules, to the cut)
        elif any(o.action == r.action and o.target == r.target for o in out):
            continue
        out.append(r)
    return out


def _cost(repairs: list[Repair], report: VerifyReport, plan: RepairPlan) -> list[Step]:
    """Each repair with the findings it mends and, for the cut, the ledger's exact loss and what it keeps."""
    kinds = Counter(report.by_kind())
    steps = []
    for r in repairs:
        step = Step(r, mends=sum(kinds.pop(k, 0) for k in r.kinds))
        if r.action in CUTS and plan.ledger is not None:
            ledger = plan.ledger
            step.records_lost, step.bytes_lost = ledger.records_lost, ledger.bytes_lost
            step.records_kept, step.bytes_kept = ledger.records_kept, ledger.bytes_kept
        steps.append(step)
    return steps


def _recovery_words(plan: RecoveryPlan) -> str:
    if plan.mode == "crash":
        return "the last writer did not shut down cleanly"
    return f"{plan.queue_entries_dropped} consume-queue entries past the log's end dropped"
