"""`rebuild`: consume queues and/or the index built again from the commitlog, compared with the ones the
store holds, and (with apply) swapped in.

The log is dispatched as the broker's reput does it (`engine.dispatcher`, the code every writer
dispatches with) into a staging folder inside the store, `.rebuild/<id>/`. The comparison is per
queue (entries equal, missing from the store, extra in it, different at the same queue offset;
filler entries are not entries) and, for the index, over the keys as a multiset of (key hash,
physical offset). Apply swaps the staged folders in (`files.swap`: journaled, the old folders to
lost/). The store's lock is held throughout; a store a broker holds is refused, and so is one whose
last writer crashed (`recover` first: the log must end where its records end).
"""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rmqtool.engine.commitlog import CommitLog
from rmqtool.engine.dispatcher import Dispatcher
from rmqtool.engine.index_service import IndexService
from rmqtool.engine.opening import Store, open_store
from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.files.lock import StoreLock
from rmqtool.files.lost import Lost
from rmqtool.files.paths import CONSUMEQUEUE_DIR, INDEX_DIR, StorePaths
from rmqtool.files.swap import discard_staging, finish_swap, staging_root, swap_in
from rmqtool.structures import consumequeue
from rmqtool.structures.consumequeue.queue import ConsumeQueue
from rmqtool.structures.consumequeue.queues import FileQueues

LISTED_QUEUES = 1000  # queues with differences listed in the report; the rest are counted


@dataclass
class QueueDiff:
    topic: str
    queue_id: int
    equal: int = 0
    missing: int = 0  # entries the rebuild has and the store lacks
    extra: int = 0  # entries the store has and the rebuild does not
    different: int = 0  # same queue offset, another entry

    @property
    def changed(self) -> bool:
        return bool(self.missing or self.extra or self.different)

    def to_json(self) -> dict:
        return {"topic": self.topic, "queueId": self.queue_id, "equal": self.equal, "missing": self.missing,
                "extra": self.extra, "different": self.different}


@dataclass
class RebuildReport:
    parts: list[str]
    queues: list[QueueDiff] = field(default_factory=list)
    index: dict | None = None  # keysEqual, keysMissing, keysExtra, filesBefore, filesAfter
    applied: bool = False
    lost: str | None = None

    @property
    def changes(self) -> bool:
        return any(q.changed for q in self.queues) or bool(self.index and (self.index["keysMissing"]
                                                                           or self.index["keysExtra"]))

    def to_json(self) -> dict:
        changed = [q for q in self.queues if q.changed]
        return {"parts": self.parts, "changes": self.changes, "applied": self.applied, "lost": self.lost,
                "queuesCompared": len(self.queues), "queuesChanged": len(changed),
                "entriesMissing": sum(q.missing for q in self.queues),
                "entriesExtra": sum(q.extra for q in self.queues),
                "entriesDifferent": sum(q.different for q in self.queues),
                "queues": [q.to_json() for q in changed[:LISTED_QUEUES]], "index": self.index}


def rebuild(root: str | os.PathLike | Store, config=None, *, queues: bool = True, index: bool = True,
            apply: bool = False) -> RebuildReport:
    """Rebuild the queues and/or the index of the store at `root` into staging, compare, and swap in
    with `apply` when they differ. Holds the store's lock from before the build to after the swap."""
    store = root if isinstance(root, Store) else open_store(root, config)
    store.require_writable("rebuild")
    lock = StoreLock(store.paths)
    try:
        paths = store.paths
        finish_swap(paths)  # a rebuild killed during its swap
        discard_staging(paths)
        if paths.abort.exists():
            raise RmqError(f"store {paths.root} was not shut down cleanly (abort file present): run `rmqtool "
                           "recover` first")
        parts = [name for name, on in ((CONSUMEQUEUE_DIR, queues), (INDEX_DIR, index)) if on]
        if INDEX_DIR in parts and not store.config.messageIndexEnable:
            parts.remove(INDEX_DIR)
            if not parts:
                raise RmqError("nothing to rebuild: the store keeps no index (messageIndexEnable=false)")
        staging = staging_root(paths) / secrets.token_hex(6)
        staged = StorePaths(staging, commitlog=paths.commitlog)
        try:
            build(store, staged, CONSUMEQUEUE_DIR in parts, INDEX_DIR in parts)
            report = compare(store, staged, parts)
        except BaseException:
            shutil.rmtree(staging_root(paths), ignore_errors=True)
            raise
        if apply and report.changes:
            lost = Lost(paths, report.to_json())
            swap_in(paths, staging, parts, lost.directory)
            report.applied, report.lost = True, str(lost.directory)
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
    cfg = store.config
    staged.root.mkdir(parents=True)
    if queues:
        staged.consumequeue.mkdir()
    built: dict[tuple[str, int], ConsumeQueue] = {}
    nothing = _NoQueue()

    def queue_for(topic: str, queue_id: int):
        if not queues:
            return nothing
        cq = built.get((topic, queue_id))
        if cq is None:
            cq = built[(topic, queue_id)] = ConsumeQueue(staged.queue_dir(topic, queue_id), topic, queue_id,
                                                         cfg.mappedFileSizeConsumeQueue)
        return cq

    log = CommitLog(store.paths.commitlog, cfg)
    keys = IndexService(staged.index, cfg) if index else None
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
    if index and not staged.index.exists():
        staged.index.mkdir()  # a log without keys: the rebuilt index is an empty folder


def compare(store: Store, staged: StorePaths, parts: list[str]) -> RebuildReport:
    report = RebuildReport(parts)
    reader = StoreReader(store)
    if CONSUMEQUEUE_DIR in parts:
        now = FileQueues(store.paths, store.config.mappedFileSizeConsumeQueue)
        new = FileQueues(staged, store.config.mappedFileSizeConsumeQueue)
        names = sorted({(t, q) for side in (now, new) for t in side.topics() for q in side.queue_ids(t)})
        log_start = reader.segments[0].start if reader.segments else 0
        report.queues = [_compare_queue(now, new, t, q, log_start) for t, q in names]
        now.close()
        new.close()
    if INDEX_DIR in parts:
        from rmqtool.structures import index

        staged_files = [staged.index / name for name in index.file_names(staged.index)]
        equal, missing, extra = _multiset_diff(_keys(reader.index_paths(), reader), _keys(staged_files, reader))
        report.index = {"keysEqual": equal, "keysMissing": missing, "keysExtra": extra,
                        "filesBefore": len(reader.index_paths()), "filesAfter": len(staged_files)}
    return report


def _entries(store: FileQueues, topic: str, queue_id: int, log_start: int) -> tuple[np.ndarray, np.ndarray]:
    """(queue offsets, entries) of a queue, filler entries and entries into the deleted head of the log
    (before `log_start`, which the broker no longer serves) left out; empty when the side lacks the queue."""
    if queue_id not in store.queue_ids(topic):
        return np.zeros(0, dtype=np.int64), consumequeue.decode_entries(b"")
    chunks = list(store.read(topic, queue_id))
    if not chunks:
        return np.zeros(0, dtype=np.int64), consumequeue.decode_entries(b"")
    qoffs = np.concatenate([c[0] for c in chunks])
    entries = np.concatenate([c[1] for c in chunks])
    real = (entries["size"] != consumequeue.FILLER_SIZE) & (entries["commitLogOffset"] >= log_start)
    return qoffs[real], entries[real]


def _compare_queue(now: FileQueues, new: FileQueues, topic: str, queue_id: int, log_start: int) -> QueueDiff:
    q_now, e_now = _entries(now, topic, queue_id, log_start)
    q_new, e_new = _entries(new, topic, queue_id, log_start)
    common, i_now, i_new = np.intersect1d(q_now, q_new, assume_unique=True, return_indices=True)
    same = int((e_now[i_now] == e_new[i_new]).sum())
    return QueueDiff(topic, queue_id, equal=same, different=len(common) - same, missing=len(q_new) - len(common),
                     extra=len(q_now) - len(common))


def _keys(files: list[Path], reader: StoreReader) -> np.ndarray:
    """Every (key hash, physical offset) the index files hold, as one structured array (a file that cannot
    be read as an index file holds none: its keys are missing)."""
    found = []
    for p in files:
        try:
            found.append(reader.index_file(p).entries()[["keyHash", "phyOffset"]])
        except RmqError:
            continue
    pairs = np.zeros(sum(len(f) for f in found), dtype=[("keyHash", "<i8"), ("phyOffset", "<i8")])
    at = 0
    for f in found:
        pairs["keyHash"][at : at + len(f)] = f["keyHash"]
        pairs["phyOffset"][at : at + len(f)] = f["phyOffset"]
        at += len(f)
    return pairs


def _multiset_diff(before: np.ndarray, after: np.ndarray) -> tuple[int, int, int]:
    """(in both, only after, only before) of two multisets of (key hash, physical offset), duplicates
    counted: both sorted together once (two integer keys), then counted per run of equal pairs."""
    hashes = np.concatenate([before["keyHash"], after["keyHash"]])
    offsets = np.concatenate([before["phyOffset"], after["phyOffset"]])
    side = np.concatenate([np.zeros(len(before), dtype=np.int64), np.ones(len(after), dtype=np.int64)])
    if not len(side):
        return 0, 0, 0
    order = np.lexsort((offsets, hashes))
    hashes, offsets, side = hashes[order], offsets[order], side[order]
    run = np.cumsum(np.r_[True, (hashes[1:] != hashes[:-1]) | (offsets[1:] != offsets[:-1])]) - 1
    n_after = np.bincount(run, weights=side).astype(np.int64)
    n_before = np.bincount(run) - n_after
    equal = int(np.minimum(n_before, n_after).sum())
    return equal, len(after) - equal, len(before) - equal
