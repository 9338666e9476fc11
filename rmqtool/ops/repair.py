"""`doctor --apply`: a repair is one transaction, staged whole, checked, then swapped in with one journaled step.

Under the store lock, held from the first read to the last rename:

1. the store is settled (a swap, a clean or a bulk adoption a killed process left is finished; a killed
   write is rolled back) and diagnosed (`ops.doctor`): one plan, its ledger counted before anything moves;
2. a staged image of the store is built in `.rebuild/<id>/`: the segments before the cut linked (never
   written), the segment holding the cut copied up to it, consume queues and index dispatched from that
   log, the records the ledger keeps appended again with their queue offsets continuing (`import
   --repack`'s writer), the checkpoint lowered to the newest record, and every committed consumer
   position moved through the queues' renumbering;
3. the image is verified as a store: a plan that would not leave a healthy store changes nothing;
4. the lost/ folder (the plan, the ledger of lost records, the positions moved) is staged too, and the
   swap (`files.swap.commit`) makes it, and every replaced file's move into it, one journaled step.

A kill before the journal is durable leaves the store as it was (the staging is discarded by the next
writer); after it, the next writer (a rerun of `doctor --apply` included) finishes the renames. Either
way one more run ends where an uninterrupted run ends. `RMQTOOL_TEST_KILL_AT=<step>` stops the process
with SIGKILL at that step boundary (the interruption tests); `RMQTOOL_TEST_TRACE=<file>` lists the steps.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pyarrow as pa

from rmqtool.engine import journal
from rmqtool.engine.commitlog import CommitLog
from rmqtool.engine.message_store import MessageStore
from rmqtool.engine.opening import Store, open_store
from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.files.lost import LOST_DIR, PLAN_FILE, next_lost_dir, write_staged
from rmqtool.files.paths import CONFIG_DIR, StorePaths
from rmqtool.files.swap import (
    Part,
    commit,
    link_tree,
    pending_swap,
    staged_commitlog,
    staging_root,
)
from rmqtool.io.schema import FIELD_NAMES
from rmqtool.io.sources import TableSource
from rmqtool.load.records import LoadOptions
from rmqtool.load.writer import load
from rmqtool.ops.doctor import HEALTHY, UNMENDABLE, Diagnosis, RepairPlan, diagnose, renumberings
from rmqtool.ops.ledger import LEDGER_FILE, Ledger, queue_offsets
from rmqtool.ops.log_rows import log_batches, log_rows
from rmqtool.ops.rebuild import dispatch_into
from rmqtool.ops.verify import VerifyReport, verify_store
from rmqtool.report import Finding
from rmqtool.structures.checkpoint.file import reset_to
from rmqtool.structures.commitlog.staging import replaced_segments, stage_segments
from rmqtool.structures.config.positions import FILES as POSITION_FILES
from rmqtool.structures.config.positions import Moved, move_positions

KILL_AT_ENV = "RMQTOOL_TEST_KILL_AT"
TRACE_ENV = "RMQTOOL_TEST_TRACE"
POSITIONS_FILE = "positions.json"  # in the repair's lost/ folder: every committed position it moved
MENDED, NOT_MENDED = "mended", "not-mended"

Hook = Callable[[str], None]


@dataclass
class Outcome:
    """What `apply` did: the plan it carried out, the lost/ folder, the positions moved, the check of the
    store it swapped in (or of the image it refused to swap in)."""

    before: Diagnosis
    after: VerifyReport | None = None
    lost: str | None = None
    moved: list[Moved] = field(default_factory=list)
    finished_swap: bool = False  # an interrupted repair's swap was finished first

    @property
    def status(self) -> str:
        if self.before.status in (HEALTHY, UNMENDABLE):
            return self.before.status
        return MENDED if self.after is not None and self.after.problems == 0 and self.lost is not None \
            else NOT_MENDED

    def to_json(self) -> dict:
        after = self.after
        return {**self.before.to_json(), "status": self.status, "applied": self.lost is not None,
                "lost": self.lost, "finishedInterruptedRepair": self.finished_swap,
                "positionsMoved": [m.to_json() for m in self.moved],
                "after": None if after is None else {"problems": after.problems, "warnings": after.warnings,
                                                      "byKind": after.by_kind()}}


def apply(root: str | os.PathLike, config=None, *, on_plan: Callable[[Diagnosis], None] | None = None,
          hook: Hook | None = None) -> Outcome:
    """Diagnose the store under its lock and carry the plan out as one transaction (see the module)."""
    hook = hook or _hook_from_env()
    store = open_store(root, config)
    try:
        store.require_writable("doctor --apply")  # before anything is written
    except RmqError:  # a store rmqtool does not write (5.x): checked, and refused only when it needs a change
        diagnosis = diagnose(store)
        if on_plan is not None:
            on_plan(diagnosis)
        if diagnosis.status in (HEALTHY, UNMENDABLE):
            return Outcome(diagnosis)
        raise
    _roll_back_interrupted_write(store)
    lock = store.files.lock()
    try:
        finished = store.files.settle(drop_staging=True)
        store = open_store(store.root, store.config)
        diagnosis = diagnose(store)
        if on_plan is not None:
            on_plan(diagnosis)
        outcome = Outcome(diagnosis, finished_swap=finished)
        if diagnosis.status in (HEALTHY, UNMENDABLE):
            return outcome  # nothing to do, or nothing a repair in place may do: the store stays as it is
        _transact(store, diagnosis, outcome, hook)
        return outcome
    finally:
        lock.release()


def _roll_back_interrupted_write(store: Store) -> None:
    """A write (import, append) killed mid-way is rolled back first, as every writer does (its own lock)."""
    if journal.pending(store.paths) is not None:

        MessageStore(store, create=False).close()


def _transact(store: Store, diagnosis: Diagnosis, outcome: Outcome, hook: Hook) -> None:
    paths = store.paths
    staging = staging_root(paths) / secrets.token_hex(6)
    try:
        image = _stage(store, diagnosis.repair, staging, hook)
        outcome.moved = image.moved
        outcome.after = verify_store(StoreReader(image.store))
        hook("verified")
        if outcome.after.problems:
            shutil.rmtree(staging_root(paths), ignore_errors=True)
            return
        changed = image.parts(store)
        if not changed:  # a plan that changes no file would be planned again after it: say so, keep nothing
            raise RmqError(f"{paths.root}: the plan ({', '.join(s.repair.action for s in diagnosis.steps)}) would "
                           "change no file: nothing changed")
        lost_dir = next_lost_dir(paths)
        _stage_lost(staging / LOST_DIR, diagnosis, image.moved)
        hook("ledger")
        parts = [Part(lost_dir, staging / LOST_DIR), *changed]
    except BaseException:
        if pending_swap(paths) is None:  # not committed: the staging goes
            shutil.rmtree(staging_root(paths), ignore_errors=True)
        raise
    commit(paths, staging, parts, lost_dir, clear_abort=True, hook=hook)
    outcome.lost = str(lost_dir)


@dataclass
class Image:
    """The staged store: its own paths and config, and what of it replaces the live store's files."""

    store: Store
    plan: RepairPlan
    moved: list[Moved] = field(default_factory=list)

    def parts(self, live: Store) -> list[Part]:
        """Each live path the image replaces (or removes), in the order they are swapped: the log first."""
        paths, staged = live.paths, self.store.paths
        out: list[Part] = []
        if self.plan.cut is not None:
            out += [Part(paths.commitlog / name, new) for name, new in replaced_segments(
                live.segments, live.config.mappedFileSizeCommitLog, staged.commitlog, self.plan.cut)]
        out += [Part(Path(f), None) for f in self.plan.remove]
        if self.plan.rebuild_queues:
            out.append(Part(paths.consumequeue, staged.consumequeue))
        if self.plan.rebuild_index:
            out.append(Part(paths.index, staged.index))
        if staged.checkpoint.exists() and _differs(staged.checkpoint, paths.checkpoint):
            out.append(Part(paths.checkpoint, staged.checkpoint))
        for name in POSITION_FILES:
            new = staged.root / CONFIG_DIR / name
            if new.exists() and _differs(new, paths.root / CONFIG_DIR / name):
                out.append(Part(paths.root / CONFIG_DIR / name, new))
        return out


def _differs(a: Path, b: Path) -> bool:
    return not b.exists() or a.read_bytes() != b.read_bytes()


def _stage(store: Store, plan: RepairPlan, staging: Path, hook: Hook) -> Image:
    """Build the staged image of the store the plan leaves (see the module, step 2)."""
    paths, cfg = store.paths, store.config
    staging.mkdir(parents=True)
    log_dir = staged_commitlog(paths, staging)
    log_dir.mkdir()
    image_cfg = replace(cfg, storePathCommitLog="" if log_dir.parent == staging else str(log_dir))
    stage_segments(store.segments, cfg.mappedFileSizeCommitLog, log_dir, plan.cut)
    image_paths = StorePaths(staging, None if log_dir.parent == staging else log_dir)
    if (paths.root / CONFIG_DIR).is_dir():
        shutil.copytree(paths.root / CONFIG_DIR, staging / CONFIG_DIR)
    if paths.checkpoint.is_file():
        shutil.copyfile(paths.checkpoint, image_paths.checkpoint)
    hook("staged-log")
    image = open_store(staging, image_cfg)
    if plan.rebuild_queues or plan.rebuild_index:
        dispatch_into(image, image_paths, plan.rebuild_queues, plan.rebuild_index)
    for live, built, rebuilt in ((paths.consumequeue, image_paths.consumequeue, plan.rebuild_queues),
                                 (paths.index, image_paths.index, plan.rebuild_index)):
        if not rebuilt and live.is_dir():
            link_tree(live, built)  # read by the check only: nothing writes into the image's links
    hook("rebuilt")
    image = open_store(staging, image_cfg)
    if plan.ledger is not None and plan.ledger.records_kept:
        _repack(StoreReader(store), image, plan.ledger)
        hook("repacked")
    if plan.reset_checkpoint:
        reset_to(image_paths.checkpoint, _newest_store_time(image))
        hook("checkpoint")
    staged = Image(open_store(staging, image_cfg), plan)
    if plan.ledger is not None and (staging / CONFIG_DIR).is_dir():
        staged.moved = move_positions(staging / CONFIG_DIR, _renumbered(plan.ledger, staged.store))
        hook("positions")
    return staged


def _repack(reader: StoreReader, image: Store, ledger: Ledger) -> None:
    """Append the records the ledger keeps, in log order, at the image's end (queue offsets continuing)."""

    def rows() -> Iterator[pa.RecordBatch]:
        for item in log_rows(reader, from_offset=ledger.cut):
            if not isinstance(item, Finding):
                yield item

    source = TableSource(rows(), names=FIELD_NAMES, name=str(reader.paths.root))
    opts = LoadOptions(cfg=image.config, store_timestamp=int(time.time() * 1000))
    written = load(image, source, opts, repack=True, command="doctor", register_topics=False)
    if written.messages != ledger.records_kept:
        raise RmqError(f"the repair appended {written.messages} records where its plan keeps "
                       f"{ledger.records_kept}: nothing changed")


def _newest_store_time(image: Store) -> int:
    log = CommitLog(image.paths.commitlog, image.config)
    try:
        log.find_end()
        return log.last_store_timestamp
    finally:
        log.close()


def _renumbered(ledger: Ledger, image: Store) -> dict:
    """Each queue the cut touched: its survivors' new queue offsets read back from the image, its new end."""
    new: dict[tuple[str, int], list[np.ndarray]] = {}
    reader = StoreReader(image)
    for item in log_batches(reader, from_offset=ledger.cut, verify_crc=False):  # records this repair wrote
        if isinstance(item, Finding) or not len(item):
            continue
        for key, qoffs in queue_offsets(item):
            new.setdefault(key, []).append(qoffs)
    ends = {}
    for key in set(ledger.survivors) | set(ledger.lost_entries):
        try:
            ends[key] = reader.queues.bounds(*key)[1]
        except RmqError:
            ends[key] = 0
    reader.queues.close()
    return renumberings(ledger, {k: np.concatenate(v) for k, v in new.items()}, ends)


def _stage_lost(folder: Path, diagnosis: Diagnosis, moved: list[Moved]) -> None:
    """The repair's lost/ folder, staged: its plan, the ledger of every lost record, the positions moved."""
    ledger = diagnosis.repair.ledger
    write_staged(folder, {
        PLAN_FILE: (json.dumps({"doctor": "repair", **diagnosis.to_json()}, ensure_ascii=False, indent=2)
                    + "\n").encode(),
        POSITIONS_FILE: (json.dumps([m.to_json() for m in moved], ensure_ascii=False, indent=2) + "\n").encode(),
        LEDGER_FILE: b"".join(ledger.lines()) if ledger is not None else b""})


def _hook_from_env() -> Hook:
    """The interruption tests' hook: trace each step to a file, SIGKILL at a named one."""
    kill_at, trace = os.environ.get(KILL_AT_ENV), os.environ.get(TRACE_ENV)

    def hook(step: str) -> None:
        if trace:
            with open(trace, "a", encoding="utf-8") as f:
                f.write(step + "\n")
        if kill_at and step == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook

