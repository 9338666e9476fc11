"""What the broker's start-up recovery does to a store, computed before a byte changes.

The plan follows DefaultMessageStore.recover: consume queues first (each keeps its entries
up to the first invalid one, scanning from its third-last file); then the commitlog, from
the third-last segment after a clean shutdown, or after a crash (`abort` present) from the
newest segment whose first record was stored before the checkpoint's time minus 3 s;
records are accepted as CommitLog.checkMessageAndReturnSize accepts them and the log ends at
the first one that is not. Everything past that end goes: later segments, the tail of the
last one, and consume-queue entries pointing at or past it. After a crash, index files newer
than the checkpoint's index time are dropped, and the records from the recovery start are
dispatched again into consume queues and the index. `apply` then does exactly that.

The broker only moves its in-memory write positions over a cut tail and overwrites it
later; rmqtool also zeroes those bytes, so the files on disk say where the store ends. Every byte
it zeroes and every file it removes is kept first under `<store>/lost/<UTC time>/` with the plan
(files/lost.py), and `recover_store` holds the store lock from the plan to the end of the re-dispatch.

The plan also says what the recovery costs, for the summary a person reads first: the
recovery point (the end of the last intact record and that record's store time), the records
past it and their bytes, the torn or garbage bytes around them, the queue entries and index
entries dropped and what the re-dispatch adds back, and the files removed.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from rmqtool.engine import journal
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.opening import Store, open_store
from rmqtool.engine.reader import StoreReader
from rmqtool.errors import Interrupted, RmqError
from rmqtool.files.lock import StoreLock
from rmqtool.files.paths import StorePaths, is_temporary, temporary_name
from rmqtool.files.segments import zero_range
from rmqtool.ops.recovery_plan import RecoveryPlan
from rmqtool.structures import checkpoint, consumequeue
from rmqtool.structures.checkpoint.file import lower_to
from rmqtool.structures.commitlog import recovery as commitlog
from rmqtool.structures.commitlog.geometry import size_refusal_line
from rmqtool.structures.consumequeue.recovery import (
    QUEUE_FILE_PAST_END,
    QueuePlan,
    plan_queue_cuts,
    queue_cut,
    queue_plans,
    queued_past,
)
from rmqtool.structures.cuts import cut_range
from rmqtool.structures.index import recovery as index_recovery
from rmqtool.structures.registry import structure

UNFINISHED = "unfinished file creation (the writer stopped while allocating it)"

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
    cfg = reader.config
    paths = reader.paths
    plan = RecoveryPlan("crash" if paths.abort.exists() else "clean")
    segments = reader.segments
    log = structure("commitlog")
    for f in log.refusals(log.file_findings(reader)):
        plan.refused = size_refusal_line(f.file, Path(f.file).stat().st_size, cfg.mappedFileSizeCommitLog, cfg.given)
    queues = structure("consumequeue")
    plan.queues, refused = queue_plans(reader, cfg.mappedFileSizeConsumeQueue, queues.refused_at_start, thorough)
    plan.refused = refused or plan.refused
    for directory in (paths.commitlog, paths.consumequeue, paths.index):
        if directory.is_dir():
            plan.deleted += [(str(p), UNFINISHED)
                             for p in sorted(directory.rglob(temporary_name("*"))) if is_temporary(p.name)]
    commitlog.plan_holes(reader, plan, thorough)
    if plan.refused or not segments:
        return plan
    cp = reader.checkpoint() if paths.checkpoint.exists() else checkpoint.Checkpoint()
    commitlog.plan_walk(reader, plan, cp, thorough)
    if end_only:
        return plan
    if truncate_to is not None:
        commitlog.plan_truncation(reader, plan, truncate_to)
        if plan.refused:
            return plan
    _plan_cuts(reader, cfg, plan)
    if plan.mode == "crash":
        index_recovery.plan_newer(reader, cp.indexMsgTimestamp, plan)
    if truncate_to is not None:
        index_recovery.plan_past(reader, plan)
    plan.index_keys_before = index_recovery.keys_kept(reader, plan)
    if thorough:
        _plan_rebuilds(reader, plan)
    if count_dispatch:
        _plan_dispatch(reader, cfg, plan)
    return plan




def _plan_rebuilds(reader: StoreReader, plan: RecoveryPlan) -> None:
    """--thorough: queues missing entries, and an index missing keys, are rebuilt from the log."""
    from rmqtool.ops.verify import verify_store

    plan.thorough = True
    report = verify_store(reader)
    queue_dirs = {str(reader.paths.queue_dir(q.topic, q.queue_id)): q for q in plan.queues}
    broken_queues = {f.file for f in report.findings if f.file in queue_dirs and f.severity == "error"}
    broken_queues |= {d for d, q in queue_dirs.items() if q.cut_short}
    for d in sorted(broken_queues):
        q = queue_dirs[d]
        for f in q.files:
            if (str(f), QUEUE_FILE_PAST_END) not in plan.deleted:
                plan.deleted.append((str(f), "rebuilt from the commitlog (entries missing or wrong)"))
        q.dropped, q.end, q.max_physical_end, q.files = consumequeue.queue_offset_of(q.end), 0, 0, []
        plan.cuts = [c for c in plan.cuts if not c.file.startswith(d + os.sep)]
    index_dir = str(reader.paths.index)
    if any(f.file.startswith(index_dir) and f.severity == "error" for f in report.findings):
        index_recovery.plan_rebuild(reader, plan)


def _plan_cuts(reader: StoreReader, cfg: StoreConfig, plan: RecoveryPlan) -> None:
    """Past the recovery point: the log's tail and the queue entries pointing there; the messages queued
    there whose records no longer parse are the torn ones."""
    cut_points = {id(q): queue_cut(q, plan.end) for q in plan.queues}
    queued = queued_past(plan.queues, plan.end, cfg.mappedFileSizeConsumeQueue, cut_points)
    plan.torn_messages = len(queued) - commitlog.plan_log_cuts(reader, plan, queued)
    plan_queue_cuts(plan, cfg.mappedFileSizeConsumeQueue, cut_points)


def _plan_dispatch(reader: StoreReader, cfg: StoreConfig, plan: RecoveryPlan) -> None:
    """Count the queue entries and index keys the re-dispatch after recovery adds."""
    from rmqtool.structures.consumequeue.dispatchkernel import dispatch_records

    queue_end = {(q.topic, q.queue_id): q for q in plan.queues}
    reput = max([q.max_physical_end for q in plan.queues] + [0])
    start = plan.dispatch_from if plan.dispatch_from is not None else reput
    start = max(start, reader.segments[0].start)
    index_from = index_recovery.kept_end(reader, plan)
    levels = np.asarray(cfg.delay_levels_ms, dtype=np.int64)
    for chunk in reader.scan(start, verify_crc=False):
        b = chunk.batch
        if b is None or not len(b):
            continue
        offsets = b.offsets
        keep = offsets < plan.end
        if not keep.any():
            break
        found = dispatch_records(np.frombuffer(b.buf, dtype=np.uint8), b.geometry()[keep], b.base, levels)
        names = [t for t, k in zip(b.topic_names(), keep.tolist(), strict=True) if k]
        ends = found.offset + found.size
        for i in np.flatnonzero(found.in_cq).tolist():
            q = queue_end.get((names[i], int(found.queue_id[i])))
            if q is None:
                q = QueuePlan(names[i], int(found.queue_id[i]), [], 0, 0)
                queue_end[(q.topic, q.queue_id)] = q
                plan.queues.append(q)
            if ends[i] > q.max_physical_end:
                q.added += 1
                q.max_physical_end = int(ends[i])
        if cfg.messageIndexEnable:
            key_offsets = found.key_offsets
            plan.index_keys_added += int((key_offsets >= index_from).sum())


def recover_store(root: str | os.PathLike | Store, cfg: StoreConfig | None = None, *,
                  thorough: bool = False, truncate_to: int | None = None) -> tuple[RecoveryPlan, Path | None]:
    """Plan and apply recovery under one hold of the store lock, from before the plan to the end of the
    re-dispatch: no writer can come in between what the plan saw and what recovery cuts (the store is
    resolved again once the lock is held). Returns the plan and the lost/ folder that keeps what was
    cut (None: nothing was). A refused plan changes nothing: not even a `lock` file is left behind."""
    first = root if isinstance(root, Store) else open_store(root, cfg)
    first.require_writable("recover")  # before the lock file is created or touched
    if journal.pending(first.paths) is not None:  # a write killed mid-way: rolled back (and said) first
        from rmqtool.engine.message_store import MessageStore

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
    from rmqtool.files.lost import next_lost_dir

    if not (plan.cuts or plan.deleted):
        return None
    return next_lost_dir(paths)


def apply_recovery(root: str | os.PathLike | Store, cfg: StoreConfig | None, plan: RecoveryPlan, *,
                   lock: StoreLock | None = None) -> Path | None:
    """Do what `plan` says: keep what it cuts and removes under lost/, cut, remove, re-dispatch, then
    close the store cleanly. The store lock (`lock`, taken before the plan by `recover_store`, or taken
    here) is held to the end of the re-dispatch and released with the store. Returns the lost/ folder
    (None when nothing was cut or removed)."""
    from rmqtool.engine.message_store import MessageStore

    if plan.refused:
        raise RmqError(f"recovery refused: {plan.refused}")
    store = root if isinstance(root, Store) else open_store(root, cfg)
    if lock is None:
        store.require_writable("recover")
        lock = store.files.lock()
    try:
        store.files.mark_open()  # until the re-dispatch is done no writer takes the store
        lost = _keep_and_cut(store.paths, plan)
        commitlog.fill_holes(plan.filled, store.config.mappedFileSizeCommitLog)
        if plan.truncate_to is not None:
            lower_to(store.paths.checkpoint, plan.last_store_timestamp or 0, lost)
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
    from rmqtool.files.lost import Lost

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
    by_key = {(q.topic, q.queue_id): q for q in plan.queues}
    for (topic, qid), cq in store.queues.items():
        q = by_key.get((topic, qid))
        if q is None:
            q = QueuePlan(topic, qid, [], 0, 0)
            plan.queues.append(q)
        q.added = max(q.added, cq.max_offset_in_queue - consumequeue.queue_offset_of(q.end))
    if store.index is not None:
        store.dispatch()
        now = sum(f.held for f in store.index.files)
        plan.index_keys_added = now - plan.index_keys_before
