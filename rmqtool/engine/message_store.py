"""MessageStore: a store root opened for writing, as the broker's DefaultMessageStore.

Open takes the `lock` (refusing a store anyone else holds, a running broker included),
refuses a store whose `abort` says the last writer crashed (recovery first), finds the end of
the commitlog, rebuilds the topic-queue offset table from the consume queues, catches up
dispatch, and creates `abort`. Appends go to the commitlog; dispatch to consume queues and
the index follows in chunks, as the broker's reput service follows its writers. Close
dispatches the rest, flushes every file, writes the checkpoint, and only then removes
`abort` and releases the lock.

Flush modes: `sync` acknowledges an append (a batch: one group commit) only after
`fdatasync` of the commitlog; `async` acknowledges once the bytes are in the page cache and
a background flusher makes them durable every `flushIntervalCommitLog` ms and at close.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

from rmqtool.engine import journal
from rmqtool.engine.commitlog import CommitLog
from rmqtool.engine.config import SYNC_FLUSH, SYNC_MASTER, StoreConfig
from rmqtool.engine.dispatcher import Dispatcher
from rmqtool.engine.ha.acks import SlaveAcks
from rmqtool.engine.opening import Store, not_a_store, open_store
from rmqtool.engine.recognition import require_store_root
from rmqtool.engine.results import PutResult, PutStatus
from rmqtool.engine.rollback import roll_back
from rmqtool.engine.rules import topic_refusal
from rmqtool.engine.worker import Worker
from rmqtool.errors import RmqError, warn
from rmqtool.files.lock import StoreLock
from rmqtool.files.signals import uninterrupted
from rmqtool.structures.checkpoint.file import CheckpointFile
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.hosts import SocketAddress
from rmqtool.structures.config.topics import queues_to_register, read_table, register, topics_path
from rmqtool.structures.consumequeue.offsets import QueueOffsets
from rmqtool.structures.consumequeue.queue import ConsumeQueue
from rmqtool.structures.index.service import IndexService

FLUSH_SYNC = "sync"
FLUSH_ASYNC = "async"
DISPATCH_EVERY_BYTES = 4 << 20  # the background dispatcher is woken when this much waits
DISPATCH_MAX_BEHIND = 128 << 20  # a bulk write waits for dispatch past this: mapped pages stay bounded


class MessageStore:
    def __init__(self, root: str | os.PathLike | Store, config: StoreConfig | None = None, *, flush: str | None = None,
                 create: bool = True, clock: Callable[[], int] | None = None, recovering: bool = False,
                 dispatch_from: int | None = None, register_topics: bool = False,
                 lock: StoreLock | None = None, acks: SlaveAcks | None = None) -> None:
        """`clock` (ms since the epoch) names new index files; fixtures pass a fixed one. Recovery
        opens a store whose `abort` is present (`recovering`) and re-dispatches from `dispatch_from`.
        With `register_topics`, close merges the topics written into `config/topics.json`. `root` is a
        path, opened here, or a `Store` the caller opened (its geometry is the files'). A master serving
        slaves passes their `acks`: appends wake its senders, and a SYNC_MASTER's puts wait for them."""
        store = root if isinstance(root, Store) else open_store(root, config)
        self.opened = store
        self.cfg = store.config
        self.clock = clock
        self.paths = store.paths
        self.flush_mode = flush or (FLUSH_SYNC if self.cfg.flushDiskType == SYNC_FLUSH else FLUSH_ASYNC)
        if self.flush_mode not in (FLUSH_SYNC, FLUSH_ASYNC):
            raise RmqError(f"unknown flush mode {self.flush_mode!r}: use sync or async")
        if register_topics:
            require_store_root(self.paths.root, "a write")
            read_table(topics_path(self.paths.root))  # a topic table that cannot be merged: refused before a write
        self._lock = claim(store, create, recovering, lock)  # recovery hands over the lock it planned under
        interrupted = journal.pending(self.paths)  # a write killed mid-way: rolled back before anything else
        if interrupted is not None:
            journal.cut_commitlog(self.paths, interrupted["mark"]["commitlogEnd"], self.cfg.mappedFileSizeCommitLog)
        self.register_topics = register_topics
        self.acks = acks
        self.sync_master = acks is not None and self.cfg.brokerRole == SYNC_MASTER
        self.written: dict[str, int] = {}  # topic -> queues it needs (highest queue id written + 1)
        self.commit_at_close = False  # a journaled write is whole: close removes its journal once clean
        self.commitlog: CommitLog | None = None
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}
        self.index: IndexService | None = None
        self._flusher: Worker | None = None
        self._dispatch_thread: Worker | None = None
        self._good_topics: set[str] = set()
        self._dispatch_wake_at = 0  # the next append end that may wake the dispatcher
        try:
            self._load(dispatch_from)
            if interrupted is not None:
                self._roll_back_interrupted(interrupted)
        except BaseException:
            self._close_files()
            self._lock.release()
            raise
        store.files.mark_open()
        self._dispatch_thread = Worker("rmqtool-dispatch", self.dispatcher.run)  # the broker's reput service
        self.commitlog.warmer = Worker("rmqtool-warm", self.commitlog.warm_ahead)
        if self.flush_mode == FLUSH_ASYNC:
            self._flusher = Worker("rmqtool-flush", self._flush_commitlog, self.cfg.flushIntervalCommitLog / 1000)

    def _load(self, dispatch_from: int | None) -> None:
        self.commitlog = CommitLog(self.paths.commitlog, self.cfg)
        self.commitlog.find_end()
        self.checkpoint = CheckpointFile(self.paths.checkpoint)
        if self.paths.consumequeue.is_dir():
            for topic_dir in sorted(self.paths.consumequeue.iterdir()):
                for qdir in sorted(topic_dir.iterdir()) if topic_dir.is_dir() else []:
                    if qdir.name.lstrip("-").isdigit():
                        self._open_queue(topic_dir.name, int(qdir.name))
        if self.cfg.messageIndexEnable:
            self.index = IndexService(self.paths.index, self.cfg.maxHashSlotNum, self.cfg.maxIndexNum,
                                      preallocate=self.cfg.warmMapedFileEnable, clock=self.clock)
        self.commitlog.queue_offsets = QueueOffsets.of_queues(self.queues)
        self.dispatcher = Dispatcher(self.commitlog, self._queue, self.index, self.cfg.delay_levels_ms)
        reput = max((cq.max_physical_end for cq in self.queues.values()), default=0)
        if dispatch_from is not None:
            reput = min(reput, dispatch_from)
        self.dispatcher.dispatched = min(max(reput, self.commitlog.queue.min_offset), self.commitlog.max_offset)
        self.dispatcher.run()

    def _roll_back_interrupted(self, doc: dict) -> None:
        """Undo the queues and index of a write a journal names (its commitlog is cut already), durably."""

        roll_back(self, journal.mark_of(doc))
        self.flush()
        journal.clear(self.paths)
        warn(journal.describe(doc))

    def _open_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = ConsumeQueue(self.paths.queue_dir(topic, queue_id), topic, queue_id, self.cfg.mappedFileSizeConsumeQueue,
                          self.cfg.warmMapedFileEnable)
        self.queues[(topic, queue_id)] = cq
        return cq

    def _queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = self.queues.get((topic, queue_id))
        return cq if cq is not None else self._open_queue(topic, queue_id)

    # ---- appending -------------------------------------------------------------------------
    def put_message(self, msg: message.Message, *, as_stored: bool = False) -> PutResult:
        """Append one message (see `CommitLog.put_message`)."""
        topic, queue_id = msg.topic, msg.queue_id
        if topic not in self._good_topics:
            bad = topic_refusal(topic)
            if bad:
                return bad.result()
            self._good_topics.add(topic)
        result = self.commitlog.put_message(msg, as_stored=as_stored)
        self._after_put(result, topic, queue_id)
        return self._replicated(result)

    def put_batch(self, topic: str, queue_id: int, body, *, batch_properties: str = "", sys_flag: int = 0,
                  born_timestamp: int = 0, born_host: SocketAddress, store_host: SocketAddress,
                  reconsume_times: int = 0) -> PutResult:
        """Append a client batch body as one broker batch (see `CommitLog.put_batch`)."""
        if topic not in self._good_topics:
            bad = topic_refusal(topic)
            if bad:
                return bad.result()
            self._good_topics.add(topic)
        result = self.commitlog.put_batch(topic, queue_id, body, batch_properties=batch_properties,
                                          sys_flag=sys_flag, born_timestamp=born_timestamp, born_host=born_host,
                                          store_host=store_host, reconsume_times=reconsume_times)
        self._after_put(result, topic, queue_id)
        return self._replicated(result)

    def write_planned(self, cols, physical_offset, queue_offset) -> int:
        """Append records a load planned and checked (see `CommitLog.write_planned`); returns bytes taken."""
        taken = self.commitlog.write_planned(cols, physical_offset, queue_offset)
        if self.flush_mode == FLUSH_SYNC:
            self.commitlog.flush()
        self._dispatch_thread.check()
        if self.dispatcher.behind > DISPATCH_MAX_BEHIND:
            self.dispatcher.run()  # catch up here: written pages are unmapped only once dispatched
        else:
            self._dispatch_thread.wake()
        if self.acks is not None:
            self.acks.written()
        return taken

    def _replicated(self, result: PutResult) -> PutResult:
        """A stored put as a master reports it: a SYNC_MASTER's waits for its slaves (see `SlaveAcks`)."""
        if self.acks is not None and result.status is PutStatus.PUT_OK:
            self.acks.written(notify=not self.sync_master)  # a SYNC put sends its bytes itself
            if self.sync_master:
                result.status = self.acks.wait(result.wrote_offset + result.wrote_bytes)
        return result

    # ---- a slave's appends -----------------------------------------------------------------
    def append_replica(self, offset: int, *parts) -> None:
        """Append frames a master sent (see `CommitLog.append_replica`); dispatch follows as it does appends."""
        self.commitlog.append_replica(offset, *parts)
        if self.acks is not None:  # a slave that serves slaves of its own passes the bytes on
            self.acks.written()
        self._dispatch_thread.check()
        if self.dispatcher.behind > DISPATCH_MAX_BEHIND:
            self.dispatcher.run()
        else:
            self._wake_dispatch(self.commitlog.max_offset)

    def flush_log(self) -> int:
        """fdatasync the commitlog (what a slave acknowledges) and wake dispatch; the offset now durable."""
        end = self.commitlog.max_offset
        self._flush_commitlog()
        self._dispatch_thread.wake()
        return end

    def close_replica(self) -> None:
        """A slave's clean shutdown: a record still arriving is forgotten (its master sends it again from
        the last whole record, the offset this store then reports), then `close`."""
        if self.commitlog is None:
            return
        try:
            self._dispatch_thread.check()
            self.dispatcher.run()
            self.commitlog.truncate(self.dispatcher.dispatched)
        except BaseException:  # what cannot be dispatched stays for recovery (`abort` stays too)
            for worker in (self._dispatch_thread, self._flusher):
                if worker is not None:
                    worker.stop_quietly()
            self._close_files()
            self._lock.release()
            raise
        self.close()

    @property
    def store_host(self) -> SocketAddress | None:
        """The broker address the newest record names (None in an empty store): new messages name it too."""
        return self.commitlog.store_host

    def note_written(self, topic: str, queues: int) -> None:
        """Remember that `topic` was written with queue ids below `queues` (for the topic table)."""
        if queues > self.written.get(topic, 0):
            self.written[topic] = queues

    def _flush_commitlog(self) -> None:
        """Async flush: fdatasync what was appended since the last round (fdatasync releases the GIL)."""
        for mf in list(self.commitlog.queue.files):
            wrote = mf.wrote
            if mf.flushed < wrote and not mf.map.closed:
                try:
                    os.fdatasync(mf.fd)
                except OSError as e:  # closed meanwhile (a load rolled back): nothing left to flush
                    if e.errno != errno.EBADF:
                        raise
                    continue
                mf.flushed = max(mf.flushed, wrote)

    def _after_put(self, result: PutResult, topic: str, queue_id: int) -> None:
        if result.status is not PutStatus.PUT_OK:
            return
        self.note_written(topic, queue_id + 1)
        if self.flush_mode == FLUSH_SYNC:
            self.commitlog.flush()
        self._wake_dispatch(result.wrote_offset + result.wrote_bytes)

    def _wake_dispatch(self, end: int) -> None:
        """Wake the dispatcher once `DISPATCH_EVERY_BYTES` wait, and then not again before as many more
        were appended (a wake per append while it works would cost every append a lock)."""
        if end >= self._dispatch_wake_at and end - self.dispatcher.dispatched >= DISPATCH_EVERY_BYTES:
            self._dispatch_wake_at = end + DISPATCH_EVERY_BYTES
            self._dispatch_thread.check()
            self._dispatch_thread.wake()

    # ---- durability ------------------------------------------------------------------------
    def dispatch(self) -> None:
        """Bring consume queues and the index up to the commitlog."""
        self.dispatcher.run()

    def flush(self) -> None:
        """Dispatch, then make the commitlog, queues, index and checkpoint durable."""
        self.dispatcher.run()
        self.commitlog.flush()
        for cq in self.queues.values():
            cq.flush()
        if self.index is not None:
            self.index.flush()
        cp = self.checkpoint
        cp.physic = max(self.commitlog.last_store_timestamp, self.dispatcher.last_store_timestamp) or cp.physic
        cp.logics = self.dispatcher.last_logics_timestamp or cp.logics
        if self.index is not None:
            cp.index = self.index.last_full_end_timestamp or cp.index
        cp.flush()

    def register_written(self) -> None:
        """Merge the topics written into config/topics.json (with `register_topics`; nothing changes when it
        holds them already)."""
        if self.register_topics and self.written:
            register(self.paths.root, queues_to_register(self.paths.root, self.written))

    def close(self) -> None:
        """Clean shutdown: flush everything, write the checkpoint, remove `abort`, release the lock."""
        if self.commitlog is None:
            return
        with uninterrupted():  # a close runs to its end: the store is clean, or recovery says it is not
            self._close()

    def _close(self) -> None:
        try:
            if self._flusher is not None:
                self._flusher.stop()
            self._dispatch_thread.stop()
            self.commitlog.discard_torn_tail()
            self.flush()
            self._close_files()
            self.opened.files.mark_closed()
            self.register_written()  # nothing left to change after a transaction, which registers before it commits
            if self.commit_at_close:  # a write's commit (engine.rollback.transaction): the store is clean now
                journal.clear(self.paths)
        finally:
            self._lock.release()

    def _close_files(self) -> None:
        if self.commitlog is not None:
            self.commitlog.close()
        for cq in self.queues.values():
            cq.close()
        if self.index is not None:
            self.index.close()
        self.commitlog = None

    def __enter__(self) -> MessageStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def claim(store: Store, create: bool, recovering: bool = False, lock: StoreLock | None = None) -> StoreLock:
    """The one way a writer opens a store root: make it (when allowed), take the lock (or keep the
    `lock` the caller holds already), finish a bulk load's interrupted adoption, and refuse a store
    whose last writer crashed. The caller releases the returned lock."""
    _prepare_root(store, create)
    lock = store.files.lock() if lock is None else lock
    try:
        store.files.settle()
        if not recovering and not journal.journal_path(store.paths).exists():  # a killed write: rolled back next
            store.files.refuse_unclean()
    except BaseException:
        lock.release()
        raise
    return lock


def _prepare_root(store: Store, create: bool) -> None:
    paths, root = store.paths, store.root
    require_store_root(root, "a write")
    store.require_writable("write to")
    if paths.is_store():
        return
    if not create:
        raise not_a_store(root)
    if root.exists() and any(p.name not in ("lock", "config") for p in root.iterdir()):
        raise RmqError(f"{root} is not empty and holds no store: refusing to create one there")
    try:
        paths.commitlog.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RmqError(f"cannot create {paths.commitlog}: {e.strerror}") from None
