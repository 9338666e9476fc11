"""`doctor`: every structure's check, one plan that mends what they found, and (apply) the plan carried out.

The diagnosis is read-only: the store is checked whole (`verify`: every structure in the registry,
each against the log), the broker's recovery is planned (what it would cut at its next start), and each
structure plans the repairs its findings call for (`Structure.repairs`). The plan is the repairs in the
registry's order of actions (structure.ACTIONS): the log first, what points into it after. Applying it
runs each repair as the command that owns it runs it (recover, `import --repack`, rebuild), each under
the store lock and the write journal, everything cut kept under lost/; then the store is checked again.

A damaged record in the log is mended by a cut at it and the intact records after it appended again
(kept first as lost/<time>/salvaged.parquet): nothing the broker's recovery keeps is lost, and more is
kept than it keeps (it keeps nothing after the cut). A store with damage no repair in place undoes (a
missing segment between two others) is named and left as it is.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rmqtool.engine.opening import Store, open_store
from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.ops.recovery import plan_recovery, recover_store
from rmqtool.ops.recovery_plan import RecoveryPlan
from rmqtool.ops.verify import VerifyReport, verify_store
from rmqtool.report import Finding
from rmqtool.structures import REGISTRY
from rmqtool.structures.structure import (
    CANNOT_MEND,
    CUT_AND_REPACK,
    FINISH_REPACK,
    REBUILD_INDEX,
    REBUILD_QUEUES,
    RECOVER,
    RESET_CHECKPOINT,
    Repair,
)

HEALTHY, PLAN, UNMENDABLE = "healthy", "plan", "unmendable"
SALVAGED = "salvaged.parquet"  # the intact records after a cut, kept in the doctor's lost/ folder
REPACKED = "repacked"  # beside it once they are appended again: a folder without it after a cut is unfinished


@dataclass
class Step:
    """One repair of the plan and what it costs: findings it mends, records and bytes it drops (kept in lost/),
    records it keeps by appending them again."""

    repair: Repair
    mends: int = 0
    records_lost: int = 0
    bytes_lost: int = 0
    records_kept: int = 0  # CUT_AND_REPACK: intact records after the cut, appended again at new offsets
    bytes_kept: int = 0

    def to_json(self) -> dict:
        return {**self.repair.to_json(), "mends": self.mends, "recordsLost": self.records_lost,
                "bytesLost": self.bytes_lost, "recordsKept": self.records_kept, "bytesKept": self.bytes_kept}


@dataclass
class Diagnosis:
    """A store's findings and the plan that mends them."""

    root: Path
    report: VerifyReport
    recovery: RecoveryPlan | None
    steps: list[Step] = field(default_factory=list)
    refused: str | None = None  # why the broker's recovery refuses the store, when it does

    @property
    def status(self) -> str:
        if any(s.repair.action == CANNOT_MEND for s in self.steps):
            return UNMENDABLE
        return PLAN if self.steps else HEALTHY

    def to_json(self) -> dict:
        r = self.report
        return {"store": str(self.root), "status": self.status, "problems": r.problems, "warnings": r.warnings,
                "byKind": r.by_kind(), "recoveryRefused": self.refused,
                "steps": [s.to_json() for s in self.steps],
                "recordsLost": sum(s.records_lost for s in self.steps),
                "bytesLost": sum(s.bytes_lost for s in self.steps)}


def diagnose(root: str | os.PathLike | Store, config=None) -> Diagnosis:
    """Check the store whole and plan what mends it; nothing is written."""
    store = root if isinstance(root, Store) else open_store(root, config)
    reader = StoreReader(store)
    report = verify_store(reader)
    try:
        recovery: RecoveryPlan | None = plan_recovery(store)
        refused = recovery.refused
    except RmqError as e:  # a store rmqtool does not write (5.x): checked, never recovered
        recovery, refused = None, str(e)
    repairs = [*_unfinished_repacks(reader), *(r for s in REGISTRY for r in s.repairs(report, reader))]
    if recovery is not None and recovery.changes and not refused and \
            not any(r.action in (RECOVER, CUT_AND_REPACK) for r in repairs):
        repairs.append(Repair("commitlog", RECOVER, str(store.paths.commitlog),
                              f"the broker's recovery at its next start: {_recovery_words(recovery)}"))
    steps = [s for s in _cost(_one_per_action(repairs, recovery), report, recovery, reader)
             if s.mends or s.repair.action in (FINISH_REPACK, CUT_AND_REPACK, RECOVER, CANNOT_MEND)]
    if any(s.repair.action == CANNOT_MEND for s in steps):
        steps = [s for s in steps if s.repair.action == CANNOT_MEND]
    return Diagnosis(Path(store.root), report, None if refused else recovery, steps, refused)


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


def _unfinished_repacks(reader: StoreReader) -> list[Repair]:
    """A cut-and-repack interrupted after its cut and before its records were appended again: the log ends at
    the cut and the intact records wait in lost/<time>/salvaged.parquet (a folder whose cut never happened, or
    whose records went back, is left as evidence)."""
    import json

    from rmqtool.files.lost import LOST_DIR, PLAN_FILE
    from rmqtool.ops.hashing import log_extent

    found: list[Repair] = []
    log_end = None  # walked once, and only when a doctor's folder is waiting
    for plan_file in sorted((reader.paths.root / LOST_DIR).glob(f"*/{PLAN_FILE}")):
        folder = plan_file.parent
        plan = json.loads(plan_file.read_text())
        if plan.get("doctor") != CUT_AND_REPACK or (folder / REPACKED).exists() or not (folder / SALVAGED).exists():
            continue
        log_end = log_extent(reader).end if log_end is None else log_end
        if log_end == plan["at"]:
            found.append(Repair("commitlog", FINISH_REPACK, str(folder / SALVAGED),
                                f"an interrupted doctor cut the log at {plan['at']} and did not append the intact "
                                "records it kept after the cut: append them now", (), plan["at"]))
    return found


def _one_per_action(repairs: list[Repair], recovery: RecoveryPlan | None) -> list[Repair]:
    """The repairs in the order they run, one per action and target (a cut: the lowest, which takes the others
    with it, and no lower than the broker's recovery point when the damage lies past it)."""
    repairs = sorted(repairs, key=lambda r: (r.order, r.at if r.at is not None else -1))
    out: list[Repair] = []
    for r in repairs:
        if r.action == CUT_AND_REPACK:
            if any(o.action == CUT_AND_REPACK for o in out):
                continue
            if recovery and not recovery.refused and recovery.end < recovery.data_end and recovery.end < (r.at or 0):
                r = Repair(r.structure, r.action, r.target, r.reason, r.kinds, recovery.end)
        elif r.action == RECOVER and any(o.action in (RECOVER, CUT_AND_REPACK) for o in out):
            continue  # a cut recovers the store as well (the broker's rules, to the cut)
        elif any(o.action == r.action and o.target == r.target for o in out):
            continue
        out.append(r)
    return out


def _cost(repairs: list[Repair], report: VerifyReport, recovery: RecoveryPlan | None,
          reader: StoreReader) -> list[Step]:
    kinds = Counter({k: n for k, n in report.by_kind().items()})
    steps = []
    for r in repairs:
        step = Step(r, mends=sum(kinds.pop(k, 0) for k in r.kinds))
        if r.action == FINISH_REPACK:
            step.records_kept = _rows_in(Path(r.target))
        elif r.action == CUT_AND_REPACK:
            step.records_kept, step.bytes_kept = _intact_after(reader, r.at or 0)
            step.records_lost = sum(1 for f in report.findings if f.structure == "commitlog" and f.offset >= (r.at or 0)
                                    and f.kind in r.kinds)
            step.bytes_lost = sum(f.bytes for f in report.findings if f.structure == "commitlog" and f.kind in r.kinds)
        elif r.action == RECOVER and recovery is not None:
            step.records_lost, step.bytes_lost = recovery.messages_lost, recovery.bytes_lost
        steps.append(step)
    return steps


def _intact_after(reader: StoreReader, offset: int) -> tuple[int, int]:
    """(records, bytes) intact from `offset` to the log's end: those a cut at `offset` appends again."""
    from rmqtool.ops.log_rows import log_batches

    records = size = 0
    for item in log_batches(reader, from_offset=offset):
        if not isinstance(item, Finding):
            records += len(item)
            size += int(item.cols["totalSize"].sum())
    return records, size


def _rows_in(parquet: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(parquet).metadata.num_rows


def _recovery_words(plan: RecoveryPlan) -> str:
    if plan.mode == "crash":
        return "the last writer did not shut down cleanly"
    return f"{plan.queue_entries_dropped} consume-queue entries past the log's end dropped"


@dataclass
class Outcome:
    """What `apply` did: each step's lost/ folder, and the store's check afterwards."""

    before: Diagnosis
    lost: list[str] = field(default_factory=list)
    after: VerifyReport | None = None

    @property
    def mended(self) -> bool:
        return self.after is not None and self.after.problems == 0

    def to_json(self) -> dict:
        after = self.after
        return {**self.before.to_json(), "applied": True, "lost": self.lost,
                "after": None if after is None else {"problems": after.problems, "warnings": after.warnings,
                                                      "byKind": after.by_kind()}}


def apply(diagnosis: Diagnosis, config=None) -> Outcome:
    """Carry out the plan, step by step (each a transaction of its own, what it cuts kept in lost/), then check
    the store again. A plan with a step that cannot mend is refused whole, before anything is written."""
    if diagnosis.status == UNMENDABLE:
        raise RmqError(f"{diagnosis.root}: cannot be mended in place, nothing changed: "
                       f"{next(s.repair.reason for s in diagnosis.steps if s.repair.action == CANNOT_MEND)}")
    from rmqtool.files.lock import lock_holder

    root = diagnosis.root
    store = open_store(root, config)
    store.require_writable("doctor --apply")  # before anything is written
    holder = lock_holder(store.paths)
    if holder is not None:
        raise RmqError(f"store {root} is locked by process {holder} (a running broker?): nothing changed")
    outcome = Outcome(diagnosis)
    actions = [s.repair for s in diagnosis.steps]
    for repair in actions:
        if repair.action == FINISH_REPACK:
            _repack(root, config, Path(repair.target))
        elif repair.action == CUT_AND_REPACK:
            outcome.lost += _cut_and_repack(root, config, repair.at or 0)
        elif repair.action == RECOVER:
            outcome.lost += _recover(root, config)
    rebuild_queues = any(r.action == REBUILD_QUEUES for r in actions)
    rebuild_index = any(r.action == REBUILD_INDEX for r in actions)
    if rebuild_queues or rebuild_index:
        outcome.lost += _rebuild(root, config, rebuild_queues, rebuild_index)
    if any(r.action == RESET_CHECKPOINT for r in actions):
        outcome.lost += _reset_checkpoint(root, config)
    outcome.after = verify_store(StoreReader(open_store(root, config)))
    return outcome


def _recover(root: Path, config, truncate_to: int | None = None) -> list[str]:
    plan, lost = recover_store(root, _cfg(root, config), truncate_to=truncate_to)
    if plan.refused:
        raise RmqError(f"recovery refused: {plan.refused}")
    return [str(lost)] if lost else []


def _cut_and_repack(root: Path, config, at: int) -> list[str]:
    """Keep the intact records from `at` on (lost/<time>/salvaged.parquet), cut the log at `at` as recovery
    cuts it, and append them again from there."""
    from rmqtool.files.lost import Lost
    from rmqtool.ops.export import export_store

    store = open_store(root, config)
    kept = Lost(store.paths, {"doctor": "cut-and-repack", "at": at, "salvaged": SALVAGED})
    salvaged = kept.directory / SALVAGED
    summary = export_store(StoreReader(store), salvaged, "parquet", from_offset=at, what="doctor")
    lost = [str(kept.directory), *_recover(root, config, truncate_to=at)]
    _repack(root, config, salvaged, summary.messages)
    return lost


def _repack(root: Path, config, salvaged: Path, rows: int | None = None) -> None:
    """Append the records of `salvaged` at the log's end (as `import --repack`), then mark their folder done."""
    from rmqtool.files.lock import fsync_path
    from rmqtool.io.sources import open_input
    from rmqtool.load.records import LoadOptions
    from rmqtool.load.writer import load

    if rows is None or rows:
        cfg = open_store(root, config).config
        load(root, open_input(salvaged), LoadOptions(cfg=cfg, store_timestamp=int(time.time() * 1000)),
             repack=True, command="doctor")
    (salvaged.parent / REPACKED).touch()
    fsync_path(salvaged.parent)


def _rebuild(root: Path, config, queues: bool, index: bool) -> list[str]:
    from rmqtool.ops.rebuild import rebuild

    report = rebuild(root, config, queues=queues, index=index, apply=True)
    return [report.lost] if report.lost else []


def _reset_checkpoint(root: Path, config) -> list[str]:
    """The checkpoint's times lowered to the newest record's, as a cut at the log's end lowers them."""
    from rmqtool.ops.hashing import log_extent

    return _recover(root, config, truncate_to=log_extent(StoreReader(open_store(root, config))).end)


def _cfg(root: Path, config):
    return open_store(root, config).config
