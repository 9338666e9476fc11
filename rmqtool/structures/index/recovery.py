"""What recovery does to the index: which files it drops, what the re-dispatch puts back and from where.

A key cannot be taken out of a hash chain, so a file is kept whole or dropped whole, and the re-dispatch
puts the keys of its records back. After a crash, files newer than the checkpoint's index time go (the
broker's IndexService.load with lastExitOK false); a truncation drops the files holding keys of records
at or past the new end; --thorough rebuilds the whole index when verify found an error in it.

`view` is the store being read: `config`, `paths`, `index_paths()` and `index_files()`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rmqtool.report import Finding
from rmqtool.structures import index
from rmqtool.structures.recoveryplan import RecoveryContext, RecoveryPlan, plan_unfinished
from rmqtool.structures.view import RecoveredStore, StoreView

if TYPE_CHECKING:  # start-up: numba loads only when a dry run counts the re-dispatch
    from rmqtool.structures.recoveryplan import Dispatched  # the dispatch kernel's output, named by the contract

NEWER = "index file newer than the checkpoint's index time"
PAST_END = "index file holding keys of records past the new end"
REBUILT = "rebuilt from the commitlog (keys missing or unreachable)"


def plan_load(view: StoreView, plan: RecoveryPlan) -> None:
    """Files a killed writer left half-created go."""
    plan_unfinished(plan, view.paths.index)


def plan_cut(view: StoreView, plan: RecoveryPlan, context: RecoveryContext) -> None:
    """After a crash the files newer than the checkpoint's index time go, after a truncation those holding keys
    past the new end; the entries of the files kept are counted."""
    if plan.mode == "crash":
        plan_newer(view, context.index_time, plan)
    if plan.truncate_to is not None:
        plan_past(view, plan)
    plan.index_keys_before = keys_kept(view, plan)


def plan_rebuild_broken(view: StoreView, plan: RecoveryPlan, findings: list[Finding]) -> None:
    """--thorough: the whole index is rebuilt when the check found an error in it."""
    index_dir = str(view.paths.index)
    if any(f.file.startswith(index_dir) and f.severity == "error" for f in findings):
        plan_rebuild(view, plan)


class KeyCounter:
    """The keys the re-dispatch adds: those of records from where the kept files' keys end."""

    def __init__(self, plan: RecoveryPlan, start: int) -> None:
        self.plan, self.start = plan, start

    def count(self, found: Dispatched, topics: list[str]) -> None:
        self.plan.index_keys_added += int((found.key_offsets >= self.start).sum())


def count_redispatched(recovered: RecoveredStore, plan: RecoveryPlan) -> None:
    """The keys the re-dispatch added: the kept files' entries now, less before (none: the index is off)."""
    if recovered.index is not None:
        recovered.dispatch()
        now = sum(f.held for f in recovered.index.files)
        plan.index_keys_added = now - plan.index_keys_before


def kept(view: StoreView, plan: RecoveryPlan) -> list[Path]:
    """The index files the plan keeps, oldest first."""
    dropped = set(plan.index_dropped)
    return [p for p in view.index_paths() if str(p) not in dropped]


def _drop(view: StoreView, plan: RecoveryPlan, path: Path, reason: str) -> None:
    plan.index_dropped.append(str(path))
    plan.index_entries_dropped += view.index_files().held(path)
    plan.deleted.append((str(path), reason))


def plan_newer(view: StoreView, index_timestamp: int, plan: RecoveryPlan) -> None:
    """After a crash: files whose endTimestamp is past the checkpoint's index time go."""
    for path in view.index_paths():
        head = index.read_header(path)
        end_ts = int(head["endTimestamp"]) if head is not None else 0
        if end_ts > index_timestamp:
            _drop(view, plan, path, NEWER)


def plan_past(view: StoreView, plan: RecoveryPlan) -> None:
    """Truncation: files holding keys of records at or past the new end go whole, and the re-dispatch puts
    back the keys of their records before the end (from the first one's beginPhyOffset)."""
    dropped = set(plan.index_dropped)
    for path in view.index_paths():
        head = index.read_header(path)
        if head is None or int(head["endPhyOffset"]) < plan.end or str(path) in dropped:
            continue
        _drop(view, plan, path, PAST_END)
        begin = int(head["beginPhyOffset"])
        plan.index_from = begin if plan.index_from is None else min(plan.index_from, begin)


def plan_rebuild(view: StoreView, plan: RecoveryPlan) -> None:
    """--thorough, when verify found an error in the index: every kept file goes, and the re-dispatch
    rebuilds them all."""
    for path in kept(view, plan):
        _drop(view, plan, path, REBUILT)
    plan.index_keys_before = 0


def keys_kept(view: StoreView, plan: RecoveryPlan) -> int:
    """The entries of the files the plan keeps."""
    files = view.index_files()
    return sum(files.held(p) for p in kept(view, plan))


def kept_end(view: StoreView, plan: RecoveryPlan) -> int:
    """Where the kept files' keys end (the newest kept file's endPhyOffset): the re-dispatch indexes the
    records from there; 0 when none is kept."""
    files = kept(view, plan)
    head = index.read_header(files[-1]) if files else None
    return int(head["endPhyOffset"]) if head is not None else 0
