"""`rebuild`: consume queues and/or the index built again from the commitlog, compared with the ones the
store holds, and (with apply) swapped in.

The log is dispatched as the broker's reput does it (`engine.dispatcher`, the code every writer
dispatches with) into a staging folder inside the store, `.rebuild/<id>/` (its `commitlog` a link to the
store's, so it opens as a store). The two are compared by the structures' rules for replicas
(`structures/<name>/compare.py`): per queue the entries equal, missing from the store, extra in it and
different at the same queue offset (fillers and entries into the deleted head of the log are expected),
and the index keys as a multiset of (key hash, physical offset). Apply swaps the staged folders in
(`files.swap`: journaled, the old folders to lost/). The store's lock is held throughout; a store a
broker holds is refused, and so is one whose last writer crashed (`recover` first: the log must end
where its records end).
"""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass, field

from rmqtool.engine.commitlog import CommitLog
from rmqtool.engine.dispatcher import Dispatcher
from rmqtool.engine.opening import Store, open_store
from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.files.paths import COMMITLOG_DIR, CONSUMEQUEUE_DIR, INDEX_DIR, StorePaths
from rmqtool.files.swap import staging_root, swap_in
from rmqtool.ops.hashing import log_extent
from rmqtool.structures.consumequeue.compare import QueueDiff, diff_queue
from rmqtool.structures.consumequeue.queue import ConsumeQueue
from rmqtool.structures.index.compare import IndexDiff, diff_index
from rmqtool.structures.index.service import IndexService

LISTED_QUEUES = 1000  # queues with differences listed in the report; the rest are counted


@dataclass
class RebuildReport:
    """The store (side A of a replica comparison) against what its log rebuilds (side B): B's entries and
    keys the store lacks are missing, A's that B lacks are extra."""

    parts: list[str]
    queues: list[QueueDiff] = field(default_factory=list)
    index: IndexDiff | None = None
    applied: bool = False
    lost: str | None = None
    index_files: tuple[int, int] = (0, 0)  # the store's, the rebuild's

    @property
    def changes(self) -> bool:
        return any(_changed(q) for q in self.queues) or bool(self.index and (self.index.only_a or self.index.only_b))

    def to_json(self) -> dict:
        changed = [q for q in self.queues if _changed(q)]
        keys = self.index
        return {"parts": self.parts, "changes": self.changes, "applied": self.applied, "lost": self.lost,
                "queuesCompared": len(self.queues), "queuesChanged": len(changed),
                "entriesMissing": sum(q.only_b for q in self.queues),
                "entriesExtra": sum(q.only_a for q in self.queues),
                "entriesDifferent": sum(q.different for q in self.queues),
                "queues": [{"topic": q.topic, "queueId": q.queue_id, "equal": q.equal, "missing": q.only_b,
                            "extra": q.only_a, "different": q.different} for q in changed[:LISTED_QUEUES]],
                "index": None if keys is None else {"keysEqual": keys.matched, "keysMissing": keys.only_b,
                                                    "keysExtra": keys.only_a, "filesBefore": self.index_files[0],
                                                    "filesAfter": self.index_files[1]}}


def _changed(q: QueueDiff) -> bool:
    return bool(q.only_a or q.only_b or q.different)


def rebuild(root: str | os.PathLike | Store, config=None, *, queues: bool = True, index: bool = True,
            apply: bool = False) -> RebuildReport:
    """Rebuild the queues and/or the index of the store at `root` into staging, compare, and swap in
    with `apply` when they differ. Holds the store's lock from before the build to after the swap."""
    store = root if isinstance(root, Store) else open_store(root, config)
    store.require_writable("rebuild")
    lock = store.files.lock()
    try:
        paths = store.paths
        store.files.settle(drop_staging=True)
        store.files.refuse_unclean()
        parts = [name for name, on in ((CONSUMEQUEUE_DIR, queues), (INDEX_DIR, index)) if on]
        if INDEX_DIR in parts and not store.config.messageIndexEnable:
            parts.remove(INDEX_DIR)
            if not parts:
                raise RmqError("nothing to rebuild: the store keeps no index (messageIndexEnable=false)")
        staging = staging_root(paths) / secrets.token_hex(6)
        staged = StorePaths(staging)
        try:
            build(store, staged, CONSUMEQUEUE_DIR in parts, INDEX_DIR in parts)
            report = compare(store, staged, parts)
        except BaseException:
            shutil.rmtree(staging_root(paths), ignore_errors=True)
            raise
        if apply and report.changes:
            report.applied = True
            report.lost = str(swap_in(paths, staging, parts, report.to_json()))
        else:
            shutil.rmtree(staging_root(paths), ignore_errors=True)
        return report
    finally:
        lock.release()


class _NoQueue:
    """Where entries go when only the index is rebuilt."""

    def put(self, *args) -> None:
        pass


def build(store: Store, staged: StorePaths, queues: bool, index: bool) -> None:
    """Dispatch the whole log into `staged`'s consume queues and index, as the broker's reput would."""
    staged.root.mkdir(parents=True)
    (staged.root / COMMITLOG_DIR).symlink_to(store.paths.commitlog.resolve())  # opens as a store; never swapped
    dispatch_into(store, staged, queues, index)


def dispatch_into(store: Store, target: StorePaths, queues: bool, index: bool) -> None:
    """Dispatch `store`'s whole log into fresh consume queues and/or a fresh index under `target` (folders
    that must not exist yet), as the broker's reput would: each record's own queue offset places its entry."""
    cfg = store.config
    if queues:
        target.consumequeue.mkdir()
    built: dict[tuple[str, int], ConsumeQueue] = {}
    nothing = _NoQueue()

    def queue_for(topic: str, queue_id: int):
        if not queues:
            return nothing
        cq = built.get((topic, queue_id))
        if cq is None:
            cq = built[(topic, queue_id)] = ConsumeQueue(target.queue_dir(topic, queue_id), topic, queue_id,
                                                         cfg.mappedFileSizeConsumeQueue)
        return cq

    log = CommitLog(store.paths.commitlog, cfg)
    keys = IndexService(target.index, cfg.maxHashSlotNum, cfg.maxIndexNum, preallocate=cfg.warmMapedFileEnable) \
        if index else None
    try:
        log.find_end()
        dispatcher = Dispatcher(log, queue_for, keys, cfg.delay_levels_ms)
        dispatcher.dispatched = log.queue.min_offset
        dispatcher.run()
        for cq in built.values():
            cq.flush()
        if keys is not None:
            keys.flush()
    finally:
        for cq in built.values():
            cq.close()
        if keys is not None:
            keys.close()
        log.close()
    if index and not target.index.exists():
        target.index.mkdir()  # a log without keys: the rebuilt index is an empty folder


def compare(store: Store, staged: StorePaths, parts: list[str]) -> RebuildReport:
    """The store against the staged rebuild, by the structures' rules for two replicas: the staged side is
    the one whose queues start where the log now starts (fillers and entries into the deleted head of
    the log are expected, not differences)."""
    report = RebuildReport(parts)
    now = StoreReader(store)
    rebuilt = StoreReader(open_store(staged.root, store.config))
    try:
        extent = log_extent(now)
        if CONSUMEQUEUE_DIR in parts:
            names = sorted({(t, q) for side in (now, rebuilt) for t in side.topics() for q in side.queue_ids(t)})
            report.queues = [diff_queue(now, rebuilt, t, q, "b", extent.start) for t, q in names]
        if INDEX_DIR in parts:
            report.index = diff_index(now, rebuilt, extent)
            report.index_files = (len(now.index_paths()), len(rebuilt.index_paths()))
    finally:
        now.queues.close()
        rebuilt.queues.close()
    return report
