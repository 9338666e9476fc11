"""The broker's start-up recovery, planned before a byte changes and then applied.

Each structure plans its own part, phase by phase in the broker's order (`structures/recoveryplan.py`;
the rules in `structures/<name>/recovery.py`); this module loops over the registry, feeds the log's
records to what the re-dispatch would add, then keeps every byte it cuts and every file it removes under
`<store>/lost/<UTC time>/` (files/lost.py) and re-dispatches, holding the store lock throughout.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from rmqtool.engine import journal
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.message_store import MessageStore
from rmqtool.engine.opening import Store, open_store
from rmqtool.engine.reader import StoreReader
from rmqtool.errors import Interrupted, RmqError
from rmqtool.files.lock import StoreLock
from rmqtool.files.lost import Lost, next_lost_dir
from rmqtool.files.paths import StorePaths
from rmqtool.files.segments import zero_range
from rmqtool.structures.cuts import cut_range
from rmqtool.structures.recoveryplan import END, LOAD, PHASES, REBUILD, RecoveryContext, RecoveryPlan
from rmqtool.structures.registry import REGISTRY


def plan_recovery(root: str | os.PathLike | Store, cfg: StoreConfig | None = None, *, count_dispatch: bool = True,
                  thorough: bool = False, truncate_to: int | None = None, end_only: bool = False) -> RecoveryPlan:
    """What recovery would do to the store at `root`, nothing changed.

    `count_dispatch` simulates the re-dispatch to count the queue entries and index keys it
    adds (a dry run needs that; `apply_recovery` counts them from the result instead).
    `truncate_to` ends the log at that record boundary instead of where the walk ends (refused
    when it is not one, or lies past that end): queues, index and checkpoint are then what the
    broker's recovery leaves for a log that ends there. `end_only` stops once the recovery point is known (the
    doctor's cut needs where the broker's walk ends, not what its cuts cost).
    """
    store = root if isinstance(root, Store) else open_store(root, cfg)
    store.require_writable("recover")
    reader = StoreReader(store)
    plan = RecoveryPlan("crash" if reader.paths.abort.exists() else "clean")
    context = RecoveryContext(thorough, truncate_to)
    for phase in PHASES:
        if phase == REBUILD:
            if not thorough:
                continue
            from rmqtool.ops.verify import verify_store  # start-up: `recover` without --thorough checks nothing

            plan.thorough = True
            context.findings = verify_store(reader).findings
        for s in REGISTRY:
            s.plan_recovery(phase, reader, plan, context)
        if (plan.refused and phase != LOAD) or (phase == END and (end_only or not plan.end_segment)):
            return plan  # refused (the start's refusal replaces the load's), no log, or only its end was asked
    if count_dispatch:
        _count_dispatch(reader, plan)
    return plan


def _count_dispatch(reader: StoreReader, plan: RecoveryPlan) -> None:
    """The records the re-dispatch after the cuts reads (from `plan.redispatch_start` to the recovery point)
    fed to each structure's count of what it adds."""
    from rmqtool.structures.consumequeue.dispatchkernel import dispatch_records  # start-up: numba for a dry run only

    counters = [c for s in REGISTRY if (c := s.redispatch_counter(reader, plan)) is not None]
    levels = np.asarray(reader.config.delay_levels_ms, dtype=np.int64)
    for chunk in reader.scan(max(plan.redispatch_start, reader.segments[0].start), verify_crc=False):
        b = chunk.batch
        if b is None or not len(b):
            continue
        keep = b.offsets < plan.end
        if not keep.any():
            break
        found = dispatch_records(np.frombuffer(b.buf, dtype=np.uint8), b.geometry()[keep], b.base, levels)
        topics = [t for t, k in zip(b.topic_names(), keep.tolist(), strict=True) if k]
        for counter in counters:
            counter.count(found, topics)


def recover_store(root: str | os.PathLike | Store, cfg: StoreConfig | None = None, *,
                  thorough: bool = False, truncate_to: int | None = None) -> tuple[RecoveryPlan, Path | None]:
    """Plan and apply recovery under one hold of the store lock, from before the plan to the end of the
    re-dispatch: no writer can come in between what the plan saw and what recovery cuts (the store is
    resolved again once the lock is held). Returns the plan and the lost/ folder that keeps what was
    cut (None: nothing was). A refused plan changes nothing: not even a `lock` file is left behind."""
    first = root if isinstance(root, Store) else open_store(root, cfg)
    first.require_writable("recover")  # before the lock file is created or touched
    if journal.pending(first.paths) is not None:  # a write killed mid-way: rolled back (and said) first
        MessageStore(first, create=False).close()
        first = open_store(first.root, first.config)
    had_lock_file = first.paths.lock.exists()
    lock = first.files.lock()
    try:
        first.files.settle()  # what a killed clean, load or swap left: finished before the plan
        store = open_store(first.root, first.config, kind=first.kind)
        plan = plan_recovery(store, count_dispatch=False, thorough=thorough, truncate_to=truncate_to)
        if plan.refused:
            if not had_lock_file:
                first.paths.lock.unlink(missing_ok=True)
            return plan, None
        return plan, apply_recovery(store, None, plan, lock=lock)
    finally:
        lock.release()


def lost_dir_of(paths: StorePaths, plan: RecoveryPlan) -> Path | None:
    """The lost/ folder recovery by `plan` would fill if it started now; None when it cuts and removes nothing."""
    if not (plan.cuts or plan.deleted):
        return None
    return next_lost_dir(paths)


def apply_recovery(root: str | os.PathLike | Store, cfg: StoreConfig | None, plan: RecoveryPlan, *,
                   lock: StoreLock | None = None) -> Path | None:
    """Do what `plan` says: keep what it cuts and removes under lost/, cut, remove, re-dispatch, then
    close the store cleanly. The store lock (`lock`, taken before the plan by `recover_store`, or taken
    here) is held to the end of the re-dispatch and released with the store. Returns the lost/ folder
    (None when nothing was cut or removed)."""
    if plan.refused:
        raise RmqError(f"recovery refused: {plan.refused}")
    store = root if isinstance(root, Store) else open_store(root, cfg)
    if lock is None:
        store.require_writable("recover")
        lock = store.files.lock()
    try:
        store.files.mark_open()  # until the re-dispatch is done no writer takes the store
        lost = _keep_and_cut(store.paths, plan)
        for s in REGISTRY:
            s.apply_recovery(store, plan, lost)
        recovered = MessageStore(store, recovering=True, lock=lock,  # the files as cut
                                 dispatch_from=plan.dispatch_from)
    except KeyboardInterrupt:
        lock.release()
        raise _unfinished(store, "its cuts") from None
    except BaseException:
        lock.release()
        raise
    try:
        _count_added(recovered, plan)
    except KeyboardInterrupt:
        raise _unfinished(store, "the re-dispatch of queues and index") from None
    finally:
        recovered.close()  # releases the lock
    return lost


def _unfinished(store: Store, step: str) -> Interrupted:
    return Interrupted(f"recovery stopped during {step}: {store.root} keeps `abort` (no writer takes it); run "
                       f"`rmqtool recover {store.root}` again to finish, from where the store is now")


def _keep_and_cut(paths: StorePaths, plan: RecoveryPlan) -> Path | None:
    """Every range `plan` cuts is copied to lost/ and made durable before any is zeroed; every file it
    removes is moved there. Returns the lost/ folder, None when there was nothing to keep."""
    removed = [Path(f) for f in dict.fromkeys(f for f, _ in plan.deleted) if os.path.lexists(f)]
    if not (plan.cuts or removed):
        return None
    lost = Lost(paths, plan.to_json())
    ranges = [(c.file, *cut_range(c)) for c in plan.cuts]
    for file, start, end in ranges:
        lost.keep_range(file, start, end)
    for file, start, end in ranges:
        zero_range(file, start, end)
    for file in removed:
        lost.keep_file(file)
    return lost.directory


def _count_added(store, plan: RecoveryPlan) -> None:
    """Queue entries and index keys the re-dispatch added, read from the recovered store."""
    for s in REGISTRY:
        s.count_redispatched(store, plan)
