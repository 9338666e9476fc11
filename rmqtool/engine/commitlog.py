"""The commitlog: appends records to the segment queue exactly as the broker's CommitLog does.

A record goes to the last segment when it fits with 8 bytes to spare; otherwise the
segment is closed with a blank marker and the record starts the next one. Queue offsets
come from the consume queues' offset table (`QueueOffsets`, which also holds the rule for
prepared and rolled-back records). A plain or committed record with a delay level is moved to the schedule
topic (queue = level - 1) with its real topic and queue kept in properties. A client batch
is re-encoded into records written back to back in one segment.
"""

from __future__ import annotations

import os
import time
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.results import PutResult, PutStatus, refused
from rmqtool.engine.rules import (
    ENCODER_HEADROOM,
    NOT_UTF8,
    Refusal,
    fields_refusal,
    is_utf8,
    sent_topic_refusal,
    size_refusal,
    topic_refusal,
)
from rmqtool.engine.worker import Worker
from rmqtool.errors import RmqError
from rmqtool.files.filequeue import FileQueue
from rmqtool.files.mappedfile import MappedFile
from rmqtool.files.segments import nonzero_end
from rmqtool.structures.commitlog import batchkernel, message, properties, sysflag
from rmqtool.structures.commitlog.columns import RecordColumns
from rmqtool.structures.commitlog.crc import POSITIVE_MASK
from rmqtool.structures.commitlog.delay import SCHEDULE_TOPIC
from rmqtool.structures.commitlog.hosts import SocketAddress
from rmqtool.structures.commitlog.walker import Rows, walk_on
from rmqtool.structures.consumequeue.offsets import QueueOffsets

WARM_AHEAD = 64 << 20  # pages kept mapped ahead of the writer, once it has written as much
WARM_FIRST = 1 << 20  # ... and at first: a store of one message stays a few pages of a sparse segment
_WALK_ROWS = 1 << 20
_BATCH_HEADERS_KEPT = 256  # header templates kept for batches of distinct hosts and flags
_NO_BYTES = np.empty(0, dtype=np.uint8)
_DELAY_MARK = properties.DELAY + properties.NAME_VALUE_SEPARATOR
_HOST_BITS = sysflag.BORN_HOST_V6 | sysflag.STORE_HOST_V6
_HEADER_LEN = {flags: message.header_len(flags)
               for flags in (0, sysflag.BORN_HOST_V6, sysflag.STORE_HOST_V6, _HOST_BITS)}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def delay_level(props_string: str) -> int:
    """The DELAY property as the broker reads it (0 when absent or not a number)."""
    value = properties.parse_java(props_string).get(properties.DELAY)
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


class CommitLog:
    def __init__(self, directory: Path, cfg: StoreConfig) -> None:
        self.cfg = cfg
        self.segment_size = cfg.mappedFileSizeCommitLog
        self.queue = FileQueue(directory, self.segment_size, cfg.warmMapedFileEnable)
        self.queue_offsets = QueueOffsets()  # the store fills it from its consume queues on open
        self.max_delay_level = len(cfg.delay_levels_ms)
        self.last_store_timestamp = 0
        self.store_host: SocketAddress | None = None  # the broker address of the newest record on open
        self._topics: dict[str, bytes] = {}
        self._topic_arrays: dict[str, np.ndarray] = {}
        self._batch_headers: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._batch_offsets = self._batch_sizes = np.empty(0, dtype=np.int64)
        self._walk_rows = Rows.empty(_WALK_ROWS)
        self.warmer: Worker | None = None  # runs warm_ahead in the background when set

    # ---- opening -------------------------------------------------------------------------
    def find_end(self) -> None:
        """Set the write position of the last segment to the end of its records.

        Earlier segments are full by construction. A last segment that ends in anything but
        a blank marker or zeros was not closed cleanly: that is for recovery to decide. The last
        segment's newest record gives storeTimestamp and storeHost; when it holds none, the storeHost
        is the newest record's of an earlier segment.
        """
        for mf in self.queue.files[:-1]:
            mf.wrote = mf.flushed = mf.size
        last = self.queue.last
        if last is None:
            return
        pos, newest = self._walk_to_end(last)
        last.wrote = last.flushed = _classify_end(last, pos)
        if newest is not None:
            self.last_store_timestamp, self.store_host = newest.store_timestamp, newest.store_host
        for mf in reversed(self.queue.files[:-1]):  # a last segment without records (zeroed, then recovered)
            if self.store_host is not None:
                break
            self.store_host = getattr(self._newest_of_full(mf), "store_host", None)

    def _newest_of_full(self, mf: MappedFile) -> message.Message | None:
        """The newest record of a full segment, looked for back from its end marker (the segment is not walked:
        a 1 GiB segment costs its last maxMessageSize bytes)."""

        reach = self.cfg.maxMessageSize + (2 << 16)  # the body, and properties and topic of 2-byte lengths each
        return message.newest_of_full_segment(mf.map, nonzero_end(mf.path, 0), reach)

    def _walk_to_end(self, mf: MappedFile) -> tuple[int, message.Message | None]:
        """Walk `mf`'s records: where the walk stopped, and the last record (None: none)."""
        pos, newest = 0, None
        for step in walk_on(mf.arr, 0, mf.size, mf.from_offset, self._walk_rows):
            if step.count:
                newest = message.decode(mf.map, int(self._walk_rows.start[step.count - 1]), verify_crc=False)
            mf.release_range(step.start, step.stop)  # walked: a full 1 GiB segment would stay resident otherwise
            pos = step.stop
        return pos, newest

    # ---- appending -------------------------------------------------------------------------
    def _topic_bytes(self, topic: str) -> bytes:
        b = self._topics.get(topic)
        if b is None:
            b = self._topics[topic] = topic.encode("utf-8")
        return b

    def _space_for(self, length: int) -> MappedFile:
        """The segment the next `length` bytes go to, closing the current one with a blank marker if needed."""
        mf = self.queue.files[-1] if self.queue.files else None
        if mf is not None and message.fits(length, mf.size - mf.wrote):
            return mf
        mf = self.queue.writable(self.queue.max_offset)
        if not message.fits(length, mf.room):
            message.write_blank(mf.map, mf.wrote, mf.room)
            mf.wrote = mf.size
            mf = self.queue.roll()
        return mf

    def _prepare(self, msg: message.Message, as_stored: bool) -> tuple[bytes, bytes, int] | PutResult:
        """Rewrite and check `msg` in place: (topic bytes, properties bytes, record length) or a refusal."""
        if not as_stored and _DELAY_MARK in msg.properties_string:
            rewrite_delay(msg, self.max_delay_level)
        msg.sys_flag = flags = _with_host_bits(msg.sys_flag, msg.born_host, msg.store_host)
        try:
            topic = self._topics.get(msg.topic) or self._topic_bytes(msg.topic)
            props = msg.properties_string.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: the text has no UTF-8 to store
            field = "properties" if is_utf8(msg.topic) else "topic"
            return Refusal(PutStatus.MESSAGE_ILLEGAL, field, NOT_UTF8).result()
        body_len = len(msg.body)
        length = (_HEADER_LEN[flags & _HOST_BITS] + body_len + message.topic_len_size(msg.magic) + len(topic) + 2
                  + len(props))
        bad = size_refusal(self.cfg, msg.properties_string, body_len, len(props), length)
        if bad is not None:
            return bad.result()
        return topic, props, length

    def put_message(self, msg: message.Message, *, as_stored: bool = False) -> PutResult:
        """Append one message; the store fills in its offsets, storeTimestamp and bodyCRC.

        `msg` is updated to the record as stored (as the broker updates its message). With
        `as_stored` the message is written as it was once stored elsewhere: its
        storeTimestamp is kept and no delay rewrite happens (import).
        """
        prepared = self._prepare(msg, as_stored)
        if isinstance(prepared, PutResult):
            return prepared
        topic, props, length = prepared
        if not as_stored:
            msg.store_timestamp = time.time_ns() // 1_000_000
        msg.body_crc = zlib.crc32(msg.body) & POSITIVE_MASK
        key = (msg.topic, msg.queue_id)
        msg.queue_offset = self.queue_offsets.next_for(key, msg.sys_flag)
        mf = self._space_for(length)
        at = mf.wrote
        if _short_of_pages(mf, at + length):
            self._warm(mf, at + length)
        msg.physical_offset = mf.from_offset + at
        msg.store_size = message.encode_into(mf.map, at, msg, (topic, props))
        mf.wrote = at + length
        self.queue_offsets.take(key, msg.sys_flag)  # written: the offset is taken
        self.last_store_timestamp = msg.store_timestamp
        return PutResult(PutStatus.PUT_OK, wrote_offset=msg.physical_offset, wrote_bytes=length,
                         queue_offset=msg.queue_offset, store_timestamp=msg.store_timestamp, msg_count=1,
                         store_host=msg.store_host, offsets=(msg.physical_offset,))

    def put_batch(self, topic: str, queue_id: int, body, *, batch_properties: str = "", sys_flag: int = 0,
                  born_timestamp: int = 0, born_host: SocketAddress, store_host: SocketAddress,
                  reconsume_times: int = 0) -> PutResult:
        """Append a client batch (MessageBatch body bytes) as consecutive records of one topic-queue.

        One compiled pass encodes the records straight into the mapped segment; what stays in Python is a
        fixed handful of steps per batch (the shared header and the topic bytes are kept between batches)."""
        if sysflag.transaction_type(sys_flag) != sysflag.TRANSACTION_NOT:
            return refused(PutStatus.MESSAGE_ILLEGAL, "a batch cannot be transactional")
        if batch_properties and delay_level(batch_properties) > 0:
            return refused(PutStatus.MESSAGE_ILLEGAL, "a batch cannot be delayed")
        topic_arr = self._topic_arrays.get(topic)
        if topic_arr is None:
            topic_arr = self._topic_arrays[topic] = np.frombuffer(self._topic_bytes(topic), dtype=np.uint8)
        if len(body) > self.cfg.maxMessageSize:
            return refused(PutStatus.MESSAGE_ILLEGAL, f"batch body is {len(body)} bytes; maxMessageSize is "
                                                      f"{self.cfg.maxMessageSize}")
        props_arr = _NO_BYTES
        if batch_properties:
            props_arr = np.frombuffer(properties.java_rebuild(batch_properties).encode("utf-8"), dtype=np.uint8)
            if properties.too_long(len(props_arr)):
                return refused(PutStatus.PROPERTIES_SIZE_EXCEEDED, "batch properties exceed 32767 bytes")
        sys_flag = _with_host_bits(sys_flag, born_host, store_host)
        header, stamps = self._batch_header(sys_flag, born_host, store_host, reconsume_times)
        store_ts = now_ms()
        stamps[0], stamps[1], stamps[2] = queue_id, born_timestamp, store_ts
        src = np.frombuffer(body, dtype=np.uint8)
        cap = batchkernel.item_capacity(len(src))
        offsets, sizes = self._batch_rows(cap)
        key = (topic, queue_id)
        first_queue_offset = self.queue_offsets.next_for(key, sys_flag)
        files = self.queue.files
        mf = files[-1] if files and files[-1].wrote < files[-1].size else self.queue.writable(self.max_offset)
        while True:
            need = mf.wrote + len(src) * 2 + len(props_arr) * cap  # records outgrow client items a little
            if _short_of_pages(mf, need):
                self._warm(mf, need)
            status, n, total = batchkernel.encode_client_batch(
                src, mf.arr, mf.wrote, mf.size - mf.wrote, header, stamps, topic_arr, props_arr, first_queue_offset,
                mf.from_offset + mf.wrote, offsets, sizes)
            if status != batchkernel.BATCH_OK or n == 0:
                return _batch_refusal(status, n)
            if message.fits(total, mf.size - mf.wrote):
                break
            if mf.wrote == 0 or not message.fits(total, self.segment_size):
                return refused(PutStatus.MESSAGE_ILLEGAL, f"batch of {total} bytes does not fit a commitlog segment "
                                                          f"of {self.segment_size}")
            mf = self._space_for(total)
        wrote_offset = mf.from_offset + mf.wrote
        mf.wrote += total
        self.queue_offsets.take_batch(key, n, sys_flag)  # written: the offsets are taken
        self.last_store_timestamp = store_ts
        return PutResult(PutStatus.PUT_OK, wrote_offset=wrote_offset, wrote_bytes=total,
                         queue_offset=first_queue_offset, store_timestamp=store_ts, msg_count=n,
                         store_host=store_host, offsets=offsets[:n].tolist())

    def _batch_header(self, sys_flag: int, born_host: SocketAddress, store_host: SocketAddress,
                      reconsume_times: int) -> tuple[np.ndarray, np.ndarray]:
        """The header template of a batch's records and its stamps row (queueId, bornTimestamp, storeTimestamp,
        the storeTimestamp's place), kept for the next batch of the same hosts and flags."""
        key = (sys_flag, born_host, store_host, reconsume_times)
        kept = self._batch_headers.get(key)
        if kept is None:
            if len(self._batch_headers) >= _BATCH_HEADERS_KEPT:
                self._batch_headers.clear()
            header = np.frombuffer(message.batch_header_template(sys_flag, born_host, store_host, reconsume_times),
                                   dtype=np.uint8)
            stamps = np.array([0, 0, 0, message.store_timestamp_offset(sys_flag)], dtype=np.int64)
            kept = self._batch_headers[key] = (header, stamps)
        return kept

    def _batch_rows(self, capacity: int) -> tuple[np.ndarray, np.ndarray]:
        """Scratch rows for a batch's record offsets and sizes (read out before the next batch), grown as needed."""
        if len(self._batch_offsets) < capacity:
            self._batch_offsets = np.empty(capacity, dtype=np.int64)
            self._batch_sizes = np.empty(capacity, dtype=np.int64)
        return self._batch_offsets, self._batch_sizes

    def write_planned(self, cols: RecordColumns, physical_offset: np.ndarray, queue_offset: np.ndarray) -> int:
        """Encode records at the offsets a load planner gave them from this log's end (and checked
        against the rules); a segment left behind is closed with its blank marker. Returns the bytes taken."""
        start, n = self.max_offset, len(cols)
        if n == 0:
            return 0
        phys = physical_offset
        first = int(phys[0])
        if first != start and first != start - start % self.segment_size + self.segment_size:
            raise RmqError(f"a load planned from offset {first}, but the commitlog ends at {start}")
        lengths = cols.lengths()
        i = 0
        while i < n:
            seg_start = int(phys[i]) - int(phys[i]) % self.segment_size
            j = int(np.searchsorted(phys, seg_start + self.segment_size))
            mf = self.queue.files[-1] if self.queue.files else None
            if mf is None or mf.from_offset != seg_start:
                if mf is not None and mf.wrote < mf.size:
                    message.write_blank(mf.map, mf.wrote, mf.room)
                    mf.wrote = mf.size
                mf = self.queue.roll(seg_start)
            at = int(phys[i]) - seg_start
            self._warm(mf, int(phys[j - 1] + lengths[j - 1]) - seg_start)
            wrote = cols.encode_into(mf.arr, at, queue_offset, phys, i, j)
            mf.wrote = at + wrote
            i = j
        self.last_store_timestamp = int(cols.store_timestamp[-1])
        return self.max_offset - start

    def append_replica(self, offset: int, *parts) -> None:
        """Append bytes a master sent from its commitlog at `offset` (one frame, or frames that follow each
        other in one segment), as the broker's slave appends a frame: at the log's end, into the segment
        holding `offset` (made when there is none, or the last is full; an empty frame makes it too).
        Bytes may end inside a record."""
        files = self.queue.files
        if files and offset != self.max_offset:
            raise RmqError(f"a frame at offset {offset} does not continue the commitlog, which ends at "
                           f"{self.max_offset}")
        if not files and offset % self.segment_size:
            raise RmqError(f"a first frame at offset {offset} is not at a segment start of mappedFileSizeCommitLog="
                           f"{self.segment_size}: the master's segments have another size (give its broker.conf "
                           "with --config)")
        mf = self.queue.writable(offset)
        size = sum(len(p) for p in parts)
        if mf.end_offset != offset or size > mf.room:
            raise RmqError(f"a frame of {size} bytes at offset {offset} crosses the segment "
                           f"{mf.from_offset}..{mf.from_offset + mf.size}: the master's segments are larger than "
                           f"mappedFileSizeCommitLog={self.segment_size} (give its broker.conf with --config)")
        if size:
            mf.write(*parts)

    def truncate(self, offset: int) -> None:
        """Forget the bytes from `offset` on (a replica's record that had not arrived whole): later
        segments are removed, the one holding `offset` is zeroed past it and kept."""
        files = self.queue.files
        while files and files[-1].from_offset > offset:
            files.pop().destroy()
        last = self.queue.last
        cut = offset - last.from_offset if last is not None else 0
        if last is not None and cut < last.wrote:
            last.map[cut : last.wrote] = bytes(last.wrote - cut)
            last.wrote = last.flushed = cut
            os.fdatasync(last.fd)

    def warm_ahead(self) -> None:
        """Map the pages ahead of the writer (the warmer thread's step), as the broker warms mapped files."""
        files = self.queue.files
        if files:
            mf = files[-1]
            mf.prefault(min(mf.wrote + _warm_window(mf.wrote), mf.size))

    def _warm(self, mf: MappedFile, need: int) -> None:
        """Have pages mapped ahead of the writer: by the warmer thread, or here when it falls behind."""
        if self.warmer is not None:
            self.warmer.wake()
        if need > mf.populated:
            mf.prefault(need)

    @property
    def max_offset(self) -> int:
        files = self.queue.files
        return files[-1].from_offset + files[-1].wrote if files else 0

    def flush(self) -> None:
        self.queue.flush()

    def discard_torn_tail(self) -> None:
        """Zero bytes an interrupted append left past the write position, so the log ends cleanly."""
        mf = self.queue.last
        if mf is None or mf.wrote >= mf.size or message.unwritten(mf.map, mf.wrote):
            return
        end = min(mf.size, message.reach(mf.wrote, self.cfg.maxMessageSize + ENCODER_HEADROOM),
                  max(mf.populated, message.reach(mf.wrote)))
        mf.map[mf.wrote : end] = bytes(end - mf.wrote)

    def close(self) -> None:
        if self.warmer is not None:
            self.warmer.stop()
            self.warmer = None
        self.queue.close()


def schedule(props_string: str, topic: str, queue_id: int, max_level: int) -> tuple[str, str, int] | None:
    """Where a delayed message is stored, as the broker moves it: (properties with REAL_TOPIC and
    REAL_QID, the schedule topic, level - 1), the level clamped to `max_level`; None when not delayed."""
    level = delay_level(props_string)
    if level <= 0:
        return None
    updates = []
    if level > max_level:
        updates.append((properties.DELAY, str(max_level)))
        level = max_level
    updates += [(properties.REAL_TOPIC, topic), (properties.REAL_QID, str(queue_id))]
    return properties.java_rebuild(props_string, updates), SCHEDULE_TOPIC, level - 1


def rewrite_delay(msg: message.Message, max_level: int) -> None:
    """Move a delayed plain/commit message to the schedule topic, as the broker does."""
    if not sysflag.enters_consume_queue(msg.sys_flag):
        return
    moved = schedule(msg.properties_string, msg.topic, msg.queue_id, max_level)
    if moved is not None:
        msg.properties_string, msg.topic, msg.queue_id = moved


def message_refusal(cfg: StoreConfig, msg: message.Message) -> Refusal | None:
    """The refusal a store with `cfg` would give `msg`, without a store and without changing `msg`."""
    bad = topic_refusal(msg.topic) or fields_refusal(msg)
    if bad is not None:
        return bad
    stored = replace(msg)
    rewrite_delay(stored, len(cfg.delay_levels_ms))
    flags = _with_host_bits(stored.sys_flag, stored.born_host, stored.store_host)
    props = stored.properties_string.encode("utf-8")
    length = message.record_len(flags, len(stored.body), len(stored.topic.encode("utf-8")), len(props), stored.magic)
    return size_refusal(cfg, stored.properties_string, len(stored.body), len(props), length)


def producer_refusal(cfg: StoreConfig, msg: message.Message) -> Refusal | None:
    """`message_refusal` of a message a producer sends: its topic also meets the broker's send rule."""
    return sent_topic_refusal(msg.topic) or message_refusal(cfg, msg)


def _warm_window(wrote: int) -> int:
    """How far ahead of a writer at `wrote` the warmer maps pages: WARM_FIRST at first, growing with what
    was written up to WARM_AHEAD."""
    return min(WARM_AHEAD, max(WARM_FIRST, wrote))


def _short_of_pages(mf: MappedFile, need: int) -> bool:
    """Whether a write reaching `need` should wake the warmer: less than half its window is mapped ahead
    (so the warmer wakes once per half window, not on every append)."""
    return mf.populated < mf.size and mf.populated - need < _warm_window(need) // 2


def _batch_refusal(status: int, n: int) -> PutResult:
    """Why `encode_client_batch` took none of a batch (`n`: the items before the bad one)."""
    if status == batchkernel.BATCH_MALFORMED:
        return refused(PutStatus.MESSAGE_ILLEGAL, f"malformed batch body (message {n + 1})")
    if status == batchkernel.BATCH_PROPERTIES_TOO_LONG:
        return refused(PutStatus.PROPERTIES_SIZE_EXCEEDED, f"message {n + 1} of the batch has properties "
                                                           f"{properties.too_long_reason('bytes')}")
    return refused(PutStatus.MESSAGE_ILLEGAL, "empty batch")


def _with_host_bits(sys_flag: int, born: SocketAddress, store: SocketAddress) -> int:
    return sysflag.with_host_bits(sys_flag, born.is_v6, store.is_v6)


def _classify_end(mf: MappedFile, pos: int) -> int:
    """Where appends continue in the last segment, given where the record walk stopped."""
    if pos >= mf.size:
        return mf.size
    found = message.decode(mf.map, pos, verify_crc=False, expected_offset=mf.from_offset + pos)
    if isinstance(found, message.Blank):
        return mf.size
    if message.unwritten(mf.map, pos):
        return pos
    reason = found.reason if isinstance(found, message.Corrupt) else "a record the walk could not follow"
    raise RmqError(f"commitlog damaged at offset {mf.from_offset + pos} ({reason}): run `rmqtool recover` first")

