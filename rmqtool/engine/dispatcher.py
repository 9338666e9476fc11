"""Dispatch: reading appended records back from the commitlog into consume queues and the
index, as the broker's reput service does, many records per compiled pass.

The dispatcher keeps the physical offset it has dispatched up to. Each run walks the records
from there to the commitlog's write position, takes every record's consume-queue entry and
index keys (`consumequeue.dispatchkernel`), appends the entries to their queues in record order and
puts the keys into the index.
"""

from __future__ import annotations

import threading

import numpy as np

from rmqtool.engine.commitlog import CommitLog
from rmqtool.errors import RmqError
from rmqtool.files.mappedfile import MappedFile
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.scan import group_strings
from rmqtool.structures.commitlog.walker import Rows, walk_once
from rmqtool.structures.consumequeue import queue_keys
from rmqtool.structures.consumequeue.dispatchkernel import Dispatched, dispatch_records, dispatch_room
from rmqtool.structures.consumequeue.queue import ConsumeQueue
from rmqtool.structures.index.service import IndexService

CHUNK_RECORDS = 1 << 16


class Dispatcher:
    def __init__(self, commitlog: CommitLog, queue_for, index: IndexService | None, levels_ms: list[int]) -> None:
        self.commitlog = commitlog
        self.queue_for = queue_for  # (topic, queueId) -> ConsumeQueue
        self.index = index
        self.levels = np.asarray(levels_ms, dtype=np.int64)
        self.dispatched = commitlog.queue.min_offset
        self.last_logics_timestamp = 0
        self.last_store_timestamp = 0  # of the newest record dispatched
        self._geo = Rows.empty(CHUNK_RECORDS)
        self._fields = dispatch_room(CHUNK_RECORDS)
        self.lock = threading.Lock()  # one run at a time: the background thread or a caller

    @property
    def behind(self) -> int:
        """Bytes appended but not yet dispatched."""
        return self.commitlog.max_offset - self.dispatched

    def run(self) -> None:
        """Dispatch everything appended so far."""
        with self.lock:
            self._run()

    def _run(self) -> None:
        queue = self.commitlog.queue
        if self.dispatched < queue.min_offset:  # a slave's log starts where its master's first frame did
            self.dispatched = queue.min_offset
        while self.dispatched < queue.max_offset:
            mf = queue.find(self.dispatched)
            if mf is None:
                raise RmqError(f"dispatch: no commitlog segment holds offset {self.dispatched}")
            pos = self.dispatched - mf.from_offset
            wrote = mf.wrote
            if pos >= wrote:
                if wrote < mf.size:
                    return  # the segment is still being written
                self._past(mf, pos)
                continue
            step = walk_once(mf.arr, pos, wrote, mf.from_offset, self._geo)
            n, stop = step.count, step.stop
            if n and self._geo.end_of(n - 1) > wrote:  # a replica's last record, still arriving
                n -= 1
                stop = int(self._geo.start[n])
            if n == 0:
                if message.incomplete(mf.map, pos, wrote):
                    return  # the rest of the record (or of the end marker's segment) is still to come
                found = message.decode(mf.map, pos, verify_crc=False)
                if not isinstance(found, message.Blank):
                    raise RmqError(f"dispatch: unreadable record at offset {self.dispatched}")
                if pos + found.size != mf.size:  # a replica whose master rolls segments of another size
                    raise RmqError(f"the end marker at offset {self.dispatched} closes a segment at offset "
                                   f"{self.dispatched + found.size}, but this store's segment ends at "
                                   f"{mf.from_offset + mf.size}: its mappedFileSizeCommitLog is not its master's "
                                   "(give the master's broker.conf with --config)")
                self._past(mf, pos)
                continue
            self._dispatch(mf, n)
            self.dispatched = mf.from_offset + stop
            mf.release_range(pos, stop)  # dispatched (the writer is past `stop`): resident memory stays bounded

    def _past(self, mf: MappedFile, pos: int) -> None:
        """Done with a segment at `pos`: unmap the rest of it and go on at the next."""
        mf.release_range(pos, mf.size)
        self.dispatched = mf.from_offset + mf.size

    def _dispatch(self, mf: MappedFile, n: int) -> None:
        geo = self._geo[:n]
        found = dispatch_records(mf.arr, geo, mf.from_offset, self.levels, self._fields)
        nkeys = len(found.key_rec)
        self.last_store_timestamp = int(found.store_ts[-1])
        queued = np.flatnonzero(found.in_cq)
        if len(queued):
            self._to_queues(mf, geo, found, queued)
            self.last_logics_timestamp = int(found.store_ts[queued[-1]])
        if self.index is not None and nkeys:
            rec = found.key_rec
            self.index.put(found.key_hash.copy(), found.offset[rec], found.store_ts[rec])

    def _to_queues(self, mf: MappedFile, geo: Rows, found: Dispatched, rows: np.ndarray) -> None:
        topic_ids, names = group_strings(mf.map, geo.topic[rows], geo.topic_len[rows])
        qids = found.queue_id[rows]
        group = queue_keys(topic_ids, qids)
        if (group == group[0]).all():
            starts, order = np.zeros(1, dtype=np.int64), np.arange(len(rows))
        else:
            order = np.argsort(group, kind="stable")
            sorted_groups = group[order]
            starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
        bounds = np.r_[starts, len(rows)]
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            sel = rows[order[a:b]]
            first = sel[0]
            cq: ConsumeQueue = self.queue_for(names[topic_ids[order[a]]], int(found.queue_id[first]))
            cq.put(found.offset[sel], found.size[sel], found.tags_code[sel], int(found.queue_offset[first]))

