"""Taking a bulk write back: a mark of where every file of an open store ends, and the undo to it.

A load writes at the tail of every structure: the commitlog past its end, consume-queue entries
past each queue's end (new queues in new folders), index entries past the newest file's count
(new index files after it), and it merges its topics into config/topics.json. So the undo is a
truncation of each: segments and queue files are cut back and zeroed where they were zero, files
made since the mark are deleted, and the newest index file gets its header back, its new entries
zeroed and each slot they touched pointed at the entry it pointed at before (the first new entry of
a slot remembers it as its prevIndex); the checkpoint's times and the topic table's files get their
values and bytes back.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from rmqtool.engine import journal
from rmqtool.engine.commitlog import CommitLog
from rmqtool.engine.dispatcher import Dispatcher
from rmqtool.engine.journal import WriteMark
from rmqtool.errors import Interrupted
from rmqtool.files.paths import StorePaths
from rmqtool.files.signals import uninterrupted
from rmqtool.structures.checkpoint.file import CheckpointFile
from rmqtool.structures.config import persist
from rmqtool.structures.config.topics import topics_path
from rmqtool.structures.consumequeue.queue import ConsumeQueue
from rmqtool.structures.index.service import IndexService


class OpenStore(Protocol):
    """What a mark and its undo use of an open MessageStore, which imports this module (it undoes an
    interrupted write on open), so it is not imported here."""

    paths: StorePaths
    commitlog: CommitLog
    queues: dict[tuple[str, int], ConsumeQueue]
    index: IndexService | None
    dispatcher: Dispatcher
    written: dict[str, int]
    register_topics: bool
    checkpoint: CheckpointFile
    commit_at_close: bool

    def dispatch(self) -> None: ...

    def flush(self) -> None: ...

    def register_written(self) -> None: ...


def mark(store: OpenStore) -> WriteMark:
    """Where the store ends now (everything appended so far is dispatched first)."""
    store.dispatch()
    log = store.commitlog
    m = WriteMark(log.max_offset, log.last_store_timestamp, log.queue_offsets.snapshot(),
                  {k: (cq.files.max_offset, cq.max_physical_end) for k, cq in store.queues.items()},
                  store.dispatcher.last_logics_timestamp, dict(store.written))
    cp = store.checkpoint
    m.checkpoint = (cp.physic, cp.logics, cp.index)  # the commit's flush writes new ones (an index file filled)
    if store.index is not None:
        m.index_files, m.index_header, m.index_last_full = store.index.mark()
    if store.register_topics:
        m.topics_taken, m.topics = True, persist.snapshot(topics_path(store.paths.root))
    return m


@contextmanager
def transaction(store: OpenStore, command: str, *, journaled: bool = True) -> Iterator[WriteMark]:
    """What is written inside is all or nothing: on any exception (SIGINT, SIGTERM, a full disk) it is
    rolled back at once; with `journaled`, a journal synced before the first byte lets the next writer
    roll it back after a SIGKILL. The commit is the journal's removal by the store's clean close, once all
    is durable (the commitlog, queues, index, checkpoint and the topic table the write registers) and `abort`
    is gone: a write killed at any moment is rolled back or whole, never whole but for a file written after
    its commit (the topic table was once) nor left to the crash recovery `abort` asks for."""
    before = mark(store)
    try:
        if journaled:  # an interrupt while it is made: the roll back below finds nothing to undo, and removes it
            journal.write(store.paths, before, command)
        yield before
        if journaled:
            store.flush()
        store.register_written()
    except BaseException as e:
        with uninterrupted():
            roll_back(store, before)
            if journaled:
                store.flush()
                journal.clear(store.paths)
        if isinstance(e, KeyboardInterrupt):
            raise Interrupted(f"`{command}` stopped; what it wrote was rolled back: {store.paths.root} is as it "
                              f"was") from None
        raise
    if journaled:
        store.commit_at_close = True


def roll_back(store: OpenStore, m: WriteMark) -> None:
    """Undo every write since `m`: the files end where they ended, byte for byte."""
    with store.dispatcher.lock:
        log = store.commitlog
        log.queue.truncate(m.commitlog_end)
        # and on disk: a segment made but not yet listed, bytes encoded past the write position
        journal.cut_commitlog(store.paths, m.commitlog_end, log.segment_size)
        log.queue_offsets.restore(m.table)
        log.last_store_timestamp = m.last_store_timestamp
        for key in [k for k in store.queues if k not in m.queue_ends]:
            _drop_queue(store, key)
        for key, (end, physical_end) in m.queue_ends.items():
            cq = store.queues[key]
            cq.files.truncate(end)
            cq.max_physical_end = physical_end
        if store.index is not None:
            store.index.truncate_to(m.index_files, m.index_header, m.index_last_full)
        store.dispatcher.dispatched = m.commitlog_end
        store.dispatcher.last_logics_timestamp = m.logics_timestamp
        store.dispatcher.last_store_timestamp = m.last_store_timestamp
        store.written.clear()
        store.written.update(m.written)
        if m.checkpoint is not None:
            cp = store.checkpoint
            cp.physic, cp.logics, cp.index = m.checkpoint
        if m.topics_taken:
            persist.restore(topics_path(store.paths.root), m.topics)


def _drop_queue(store: OpenStore, key: tuple[str, int]) -> None:
    cq = store.queues.pop(key)
    for mf in cq.files.files:
        mf.destroy()
    qdir = store.paths.queue_dir(*key)
    shutil.rmtree(qdir, ignore_errors=True)
    topic_dir = qdir.parent
    if topic_dir.is_dir() and not any(topic_dir.iterdir()):
        topic_dir.rmdir()
