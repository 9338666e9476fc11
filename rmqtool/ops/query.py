"""Answers without a broker: a message by msgId, by physical offset, by key or unique key
through the hash index, by queue offset, and a queue offset by time.

Read-only: files are mapped read-only once and kept for repeated queries. Index hits are
found as the broker finds them (newest file first, each bucket's chain, hash and time
matched, at most `max` hits), and then every hit is confirmed by reading its record and
comparing topic and key, so a hash collision never comes back as an answer. A queue offset
by time is a binary search on the records' store timestamps, never on file times.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rmqtool.engine.reader import StoreReader
from rmqtool.errors import NoSuchQueue, NotFound, RmqError
from rmqtool.ops.hashing import log_extent
from rmqtool.structures import consumequeue
from rmqtool.structures.commitlog import message, msgid, properties, sysflag, uniqkey
from rmqtool.structures.commitlog.delay import SCHEDULE_TOPIC
from rmqtool.structures.consumequeue.queues import MapCache
from rmqtool.structures.index import lookup
from rmqtool.structures.layout import JAVA_LONG_MAX
from rmqtool.text import iso_time

if TYPE_CHECKING:
    import numpy as np



Hit = message.DecodedMessage  # what every query returns


def _client_msg_id(text: str) -> bool:
    """Whether `text` has the shape of a client msgId (UNIQ_KEY): 32 hex digits."""
    return len(text) == uniqkey.LEN and all(c in "0123456789abcdefABCDEF" for c in text)


class StoreQuery:
    def __init__(self, reader: StoreReader) -> None:
        self.reader = reader
        self.levels = reader.config.delay_levels_ms
        self.maps = MapCache()
        self._index: lookup.Lookup | None = None
        self.limited = False  # a key search stopped at its max_hits: more messages may carry the key
        self.matched: dict[int, str] = {}  # a key search's hit (its offset) -> the property it matched: KEYS, UNIQ_KEY

    def close(self) -> None:
        self.maps.close()
        self.reader.queues.close()

    # ---- records ---------------------------------------------------------------------------------
    def record(self, offset: int) -> message.Message:
        """The message that starts at physical offset `offset`; NotFound otherwise."""
        seg = self.reader.segment_for(offset)
        if seg is None:
            raise NotFound(self.reader.describe_absence(offset))
        found = message.decode(self.maps.get(seg.path), offset - seg.start, expected_offset=offset)
        if isinstance(found, message.Blank):
            raise NotFound(f"offset {offset} holds the blank marker that ends segment {seg.path.name}")
        if isinstance(found, message.Corrupt):
            raise NotFound(self._at_the_end(offset) or f"no message starts at offset {offset} ({found.reason})")
        return found

    def _at_the_end(self, offset: int) -> str | None:
        """What to say of `offset` when it is the log's end, where the next message will be written (None when it
        is not): the last record named."""
        if log_extent(self.reader).end != offset:
            return None
        last = None
        for chunk in self.reader.scan(self.reader.segment_for(offset).start, verify_crc=False, until=offset):
            if chunk.batch is not None and len(chunk.batch):
                last = (int(chunk.batch.offsets[-1]), int(chunk.batch.cols["totalSize"][-1]))
        said = f"offset {offset} is the end of the log: no message is written there yet"
        return said if last is None else f"{said} (the last one starts at {last[0]}, {last[1]} bytes)"

    def hit(self, msg: message.Message) -> Hit:
        return Hit(msg, consumequeue.record_tags_code(msg, self.levels))

    def by_msg_id(self, msg_id: str) -> Hit:
        """The message an offset msgId names; a client msgId (the producer's SendResult.msgId, the
        UNIQ_KEY) that is not one is looked up in every topic's index instead. A space in it is bad input."""
        msgid.refuse_spaces(msg_id)
        try:
            host, offset = msgid.decode(msg_id)
            msg = self.record(offset)
            if msg.store_host != host:
                raise NotFound(f"msgId {msg_id} names broker {host}, but the message at offset {offset} was stored "
                               f"by {msg.store_host}")
            return self.hit(msg)
        except RmqError as e:
            if not _client_msg_id(msg_id):
                raise
            reason = str(e)
        for topic in self.reader.queues.topics():
            hits = self.by_key(topic, msg_id.upper(), unique=True) if self._lookup().paths else []
            if hits:
                return hits[0]
        raise NotFound(f"{msg_id} is not an offset msgId of this store ({reason}); as a client msgId (UNIQ_KEY) no "
                       f"topic's index holds it: try --unique-key {msg_id} --scan (every topic's messages)")

    def by_msg_ids(self, msg_ids: list[str]) -> tuple[list[Hit], list[str]]:
        """The messages of several msgIds in the order given, and why each one not found is not."""
        hits, missing = [], []
        for m in msg_ids:
            try:
                hits.append(self.by_msg_id(m))
            except NotFound as e:
                missing.append(str(e))
        return hits, missing

    # ---- index -----------------------------------------------------------------------------------
    def _lookup(self) -> lookup.Lookup:
        """The store's index files, listed once (a store may hold tens of thousands)."""
        if self._index is None:
            self._index = lookup.Lookup(self.reader.index_files(), self.reader.paths.index)
        return self._index

    @property
    def skipped(self) -> dict[str, str]:
        """Index file -> why lookups skipped it (a warning to show)."""
        return self._index.skipped if self._index is not None else {}

    def index_missing(self) -> str | None:
        """Why the index cannot be searched at all (None when it can): the store has no index files."""
        return None if self._lookup().paths else f"{self.reader.paths.root} has no index files"

    def index_offsets(self, topic: str, key: str, *, begin: int = 0, end: int = JAVA_LONG_MAX,
                      max_hits: int = 64) -> list[int]:
        """The broker's raw index hits for topic#key: newest file first, at most `max_hits`.

        The lookup's rule is the index's (`structures.index.lookup`).
        """
        missing = self.index_missing()
        if missing is not None:
            raise RmqError(f"{missing}: use --scan")
        return self._lookup().offsets(topic, key, begin, end, max_hits)

    def by_key(self, topic: str, key: str, *, unique: bool = False, begin: int = 0, end: int = JAVA_LONG_MAX,
               max_hits: int = 64, real_topic: bool = False) -> list[Hit]:
        """Messages of `topic` carrying `key` (a KEYS word or the UNIQ_KEY, as the broker's queryMessage finds
        both under topic#key; `unique`: the UNIQ_KEY only), confirmed record by record."""
        topics = [topic, SCHEDULE_TOPIC] if real_topic and topic != SCHEDULE_TOPIC else [topic]
        out: dict[int, Hit] = {}
        for t in topics:
            raw = self.index_offsets(t, key, begin=begin, end=end, max_hits=max_hits)
            self.limited = self.limited or len(raw) >= max_hits
            for offset in raw:
                if offset in out:
                    continue
                try:
                    msg = self.record(offset)
                except NotFound:
                    continue
                field = matched_field(msg, topic, key, unique, real_topic)
                if field is not None:
                    out[offset], self.matched[offset] = self.hit(msg), field
        return [out[o] for o in sorted(out)]

    def scan_key(self, topic: str | None, key: str, *, unique: bool = False, begin: int = 0,
                 end: int = JAVA_LONG_MAX, max_hits: int = 64, real_topic: bool = False) -> list[Hit]:
        """The same answer from a full scan of the commitlog (no index needed); `topic` None: every topic's."""
        out = []
        for chunk in self.reader.scan(verify_crc=False):
            batch = chunk.batch
            if batch is None or not len(batch):
                continue
            for i in batch.properties_containing(key):  # a cheap first cut, on the columns
                msg = batch.message(i)
                if sysflag.transaction_type(msg.sys_flag) == sysflag.TRANSACTION_ROLLBACK:
                    continue  # never indexed: the index would not find it either
                field = matched_field(msg, topic, key, unique, real_topic)
                if begin <= msg.store_timestamp <= end and field is not None:
                    out.append(self.hit(msg))
                    self.matched[msg.physical_offset] = field
                    if len(out) >= max_hits:
                        self.limited = True
                        return out
        return out

    def why_no_hits(self, topic: str, key: str, *, unique: bool = False, begin: int = 0, end: int = JAVA_LONG_MAX,
                    max_hits: int = 64, scan: bool = False, real_topic: bool = False) -> str:
        """Why a key search found nothing, naming the part of the question that excluded everything: the
        time window (when the key is carried outside it: the same search again without it) or the key;
        NotFound when the store holds no queue of the topic at all."""
        known = sorted(self.reader.topics())
        if topic not in known:
            shown = ", ".join(known[:8]) + (f" and {len(known) - 8} more" if len(known) > 8 else "")
            raise NotFound(f"the store holds no queue of topic {topic} (its topics: {shown or 'none'})")
        what = f"{'unique key' if unique else 'key'} {key!r}"
        if begin > 0 or end < JAVA_LONG_MAX:
            find = self.scan_key if scan else self.by_key
            limited, self.limited = self.limited, False
            outside = find(topic, key, unique=unique, real_topic=real_topic, max_hits=max_hits)
            more, self.limited = self.limited, limited  # the answer's own limit is what the caller reports
            if outside:
                return outside_window(outside, more, f"of topic {topic}", what, begin, end)
        return f"no message of topic {topic} carries {what}"

    # ---- consume queues --------------------------------------------------------------------------
    @contextmanager
    def _queue_answers(self) -> Iterator[None]:
        """A queue the store lacks is an answer to a query: NotFound (decode calls it bad input)."""
        try:
            yield
        except NoSuchQueue as e:
            raise NotFound(str(e)) from None

    def by_queue_offset(self, topic: str, queue_id: int, queue_offset: int, count: int = 1,
                        missing: list[str] | None = None) -> list[Hit]:
        """The messages at `count` queue offsets from `queue_offset`. An entry whose record cannot be read (in
        a hole, past the log) is NotFound, or, given `missing`, said there while the others are answered."""
        with self._queue_answers():
            out = []
            for q in range(queue_offset, queue_offset + count):
                entry = self.reader.queues.entry(topic, queue_id, q)
                if entry is None:
                    break
                try:
                    out.append(self.hit(self.record(entry[0])))
                except NotFound as e:
                    if missing is None:
                        raise
                    missing.append(f"queue offset {q}: {e}")
            if not out and not missing:
                low, high = self.reader.queues.bounds(topic, queue_id)
                raise NotFound(f"queue {topic}/{queue_id} has offsets {low}..{high - 1}, not {queue_offset}"
                               if high > low else f"queue {topic}/{queue_id} is empty")
        return out

    def store_timestamp(self, offset: int) -> int:
        """The store timestamp of the record at physical offset `offset`."""
        seg = self.reader.segment_for(offset)
        if seg is None:
            raise NotFound(f"a queue entry points at {offset}: {self.reader.describe_absence(offset)}")
        buf = self.maps.get(seg.path)
        return message.store_timestamp_at(buf, offset - seg.start)

    def store_timestamps(self, offsets: np.ndarray) -> np.ndarray:
        """The store timestamp of the record at each physical offset (-1 where there is none to read): one
        gather per segment."""
        import numpy as np

        out = np.full(len(offsets), -1, dtype=np.int64)
        segs = self.reader.segments
        which = np.searchsorted(np.asarray(self.reader.segment_starts, dtype=np.int64), offsets, side="right") - 1
        for i in np.unique(which[(which >= 0) & (offsets >= 0)]):
            seg = segs[i]
            here = (which == i) & (offsets >= 0) & (offsets < seg.start + seg.size)
            out[here] = message.store_timestamps_at(self.maps.get(seg.path), offsets[here] - seg.start)
        return out

    def offset_by_time(self, topic: str, queue_id: int, timestamp: int) -> dict:
        """The queue offset of the first message stored at or after `timestamp` (the max offset if none), and
        that message's physical offset, store time and msgId."""
        with self._queue_answers():
            low, high = self.reader.queues.bounds(topic, queue_id)
        lo, hi = low, high
        while lo < hi:
            mid = (lo + hi) // 2
            entry = self.reader.queues.entry(topic, queue_id, mid)
            if entry is None or self.store_timestamp(entry[0]) >= timestamp:
                hi = mid
            else:
                lo = mid + 1
        doc = {"topic": topic, "queueId": queue_id, "timestamp": timestamp, "queueOffset": lo,
               "minOffset": low, "maxOffset": high}
        if lo < high:
            entry = self.reader.queues.entry(topic, queue_id, lo)
            doc["commitLogOffset"], doc["storeTimestamp"] = entry[0], self.store_timestamp(entry[0])
            doc["msgId"] = self.record(entry[0]).msg_id
        return doc


def outside_window(outside: list[Hit], more: bool, where: str, what: str, begin: int, end: int) -> str:
    """Why a search within --begin/--end found nothing, when the same search without them found `outside`:
    how many messages carry the key, when they were stored, and the window that excludes them."""
    times = [h.message.store_timestamp for h in outside]
    window = (f"--begin {iso_time(begin)}" if begin > 0 else "the start of the store") + " and " + \
        (f"--end {iso_time(end)}" if end < JAVA_LONG_MAX else "the end of the store")
    count = f"{len(outside)}{' or more' if more else ''} message(s)"
    return (f"{count} {where} carry {what}, stored {iso_time(min(times))} .. {iso_time(max(times))}: none between "
            f"{window}")


def matched_field(msg: message.Message, topic: str | None, key: str, unique: bool, real_topic: bool) -> str | None:
    """The property by which `msg` is a message of `topic` (None: of any topic) with `key` (UNIQ_KEY first, as
    the broker indexes it, then KEYS; `unique`: UNIQ_KEY only), None when it is not: what an index hit must
    prove."""
    props = properties.parse_java(msg.properties_string)
    if topic is not None and msg.topic != topic and not (real_topic and msg.topic == SCHEDULE_TOPIC
                                   and props.get(properties.REAL_TOPIC) == topic):
        return None
    if props.get(properties.UNIQ_KEY) == key:
        return properties.UNIQ_KEY
    if not unique and key in properties.keys_of(props):
        return properties.KEYS
    return None
