"""`diff A B`: two replicas of a store (a master and its slave, or two copies) compared, read-only.

Commitlog: each side holds [its first segment's start, the end of its records) (`log_extent`);
the range both hold is compared segment by segment, CHUNK bytes of both maps at a time as 64-bit words
(memcmp speed, pages given back as they are passed), down to the first differing byte, and the record
holding that byte is decoded on both sides: where it starts is where the logs diverge (two records of
other sizes at one offset differ first inside their totalSize field, a byte or two past the boundary).
What one side holds beyond the other is told as ranges with their messages and first and last store
times. Both must have the same segment size, their segments starting at multiples of it (a slave names
its files as its master does).

Consume queues: each topic/queue of either side, over the queue offsets both hold. A slave builds its
queues from the log it received: its first file starts at the file of the first queue offset it saw,
pre-filled with filler entries (0, 2147483647, 0), where the master has real entries for records the
slave never had. So on the side whose log starts later, an entry that is a filler or points before its
log start is expected where the other side's points there too, not a difference.

Index: the (keyHash, phyOffset) pairs of both sides' entries inside the common range, as multisets.
Index entries are written in log order (the broker skips a record below a file's endPhyOffset), so both
sides are read as streams in phyOffset order and compared a stretch at a time: flat memory.

Queues and index are read on a second thread while the log is compared (numpy and the page faults of the
maps run without the GIL): on two cores the whole costs about what the log does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from rmqtool.engine.reader import StoreReader, open_root_reader
from rmqtool.errors import RmqError
from rmqtool.files.segments import open_read_only, release_pages
from rmqtool.ops.hashing import CHUNK, Extent, log_extent
from rmqtool.structures import consumequeue, index
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.geometry import segment_size_of

SIDES = ("a", "b")
INDEX_CHUNK = 1 << 20  # index entries read between two page releases


# -- the pair -------------------------------------------------------------------------------------------
def segment_size(a: StoreReader, b: StoreReader) -> int:
    """The segment size both sides share; different sizes, or a segment not at a multiple of the size,
    are refused (a side without segments takes the other's)."""
    shown = [segment_size_of(r.segments)[0] for r in (a, b)]
    if None not in shown and shown[0] != shown[1]:
        raise RmqError(f"segment sizes differ: {a.paths.root} has {shown[0]}-byte segments, {b.paths.root} "
                       f"{shown[1]}-byte ones: replicas share their master's geometry")
    size = next((s for s in shown if s is not None), a.segment_size)
    for r in (a, b):
        for seg in r.segments:
            if seg.start % size:
                raise RmqError(f"{seg.path}: starts at {seg.start}, not at a multiple of the segment size {size}")
    return size


def common_range(a: Extent, b: Extent) -> Extent | None:
    lo, hi = max(a.start, b.start), min(a.end, b.end)
    return Extent(lo, hi) if lo < hi else None


def beyond(side: Extent, common: Extent | None) -> list[Extent]:
    """The parts of `side` outside `common`: a head before it and a tail after it."""
    if common is None:
        return [side] if side.start < side.end else []
    parts = [Extent(side.start, min(side.end, common.start)), Extent(max(side.start, common.end), side.end)]
    return [p for p in parts if p.start < p.end]


# -- commitlog ------------------------------------------------------------------------------------------
def first_difference(a: StoreReader, b: StoreReader, common: Extent, size: int) -> int | None:
    """The first offset of `common` whose byte differs (or that one side has no file for), else None."""
    for seg_start in range(common.start - common.start % size, common.end, size):
        lo, hi = max(common.start, seg_start), min(common.end, seg_start + size)
        sa, sb = a.segment_for(lo), b.segment_for(lo)
        held = min(sa.end if sa else lo, sb.end if sb else lo, hi)
        if sa is None or sb is None or sa.start != sb.start or held <= lo:
            return lo
        with open_read_only(sa.path) as ba, open_read_only(sb.path) as bb:
            found = _first_mismatch(ba, bb, lo - sa.start, held - sa.start)
        if found is not None:
            return sa.start + found
        if held < hi:
            return held
    return None


def _first_mismatch(ba, bb, lo: int, hi: int) -> int | None:
    """The first position of [lo, hi) where two maps differ, CHUNK at a time, pages given back as passed."""
    xa, xb = np.frombuffer(ba, dtype=np.uint8), np.frombuffer(bb, dtype=np.uint8)
    try:
        at = lo
        while at < hi:
            stop = min(hi, at - at % CHUNK + CHUNK)
            found = _mismatch_in(xa, xb, at, stop)
            release_pages(ba, at, stop)
            release_pages(bb, at, stop)
            if found is not None:
                return found
            at = stop
        return None
    finally:
        del xa, xb


def _mismatch_in(xa: np.ndarray, xb: np.ndarray, lo: int, hi: int) -> int | None:
    """The first differing position of [lo, hi): the aligned middle compared as 64-bit words."""
    mid_lo, mid_hi = min(hi, lo + (-lo) % 8), max(lo, hi - hi % 8)
    for s, e in ((lo, mid_lo), (mid_lo, mid_hi), (mid_hi, hi)):
        if e <= s:
            continue
        wa, wb = (xa[s:e], xb[s:e]) if s % 8 or e % 8 else (xa[s:e].view(np.uint64), xb[s:e].view(np.uint64))
        if np.array_equal(wa, wb):
            continue
        word = int(np.argmax(wa != wb))
        at = s + word * wa.itemsize
        return at + int(np.argmax(xa[at : at + wa.itemsize] != xb[at : at + wa.itemsize]))
    return None


def containing_record(reader: StoreReader, offset: int) -> int:
    """Where the record holding `offset` starts (or, past a segment's last record, where that record ends:
    the blank marker or the unwritten rest), walked from the segment's start."""
    seg = reader.segment_for(offset)
    if seg is None:
        return offset
    found = seg.start
    for chunk in reader.scan(seg.start, verify_crc=False, until=offset + 1):
        rows = chunk.batch
        if rows is not None and len(rows):
            start, size = int(rows.offsets[-1]), int(rows.cols["totalSize"][-1])
            found = start if start + size > offset else start + size
    return found


def record_json(reader: StoreReader, offset: int) -> dict:
    """The record at `offset` decoded (its body CRC checked apart, so a flipped body byte still shows the
    message), a blank marker, or why nothing decodes there."""
    seg = reader.segment_for(offset)
    if seg is None:
        return {"offset": offset, "problem": "no segment file holds this offset"}
    with open_read_only(seg.path) as buf:
        found = message.decode(buf, offset - seg.start, verify_crc=False, expected_offset=offset)
        checked = message.decode(buf, offset - seg.start, verify_crc=True, expected_offset=offset) \
            if isinstance(found, message.Message) else found
    out: dict = {"offset": offset}
    if isinstance(found, message.Blank):
        out["blank"] = found.size
    elif isinstance(found, message.Corrupt):
        out["problem"] = found.reason
    else:
        out["message"] = message.to_json(found)
        if isinstance(checked, message.Corrupt):
            out["problem"] = checked.reason
    return out


def differing_fields(ra: dict, rb: dict) -> list[str]:
    """The message fields (JSON names) whose values differ between two decoded records; none unless both
    are messages."""
    ma, mb = ra.get("message"), rb.get("message")
    if ma is None or mb is None:
        return []
    return [k for k in ma if ma[k] != mb.get(k) and k != "properties"]


def held_messages(reader: StoreReader, part: Extent) -> dict:
    """The messages that start in `part`: how many, and the store times of the first and the last."""
    count, first, last = 0, None, None
    for chunk in reader.scan(part.start, verify_crc=False, until=part.end):
        rows = chunk.batch
        if rows is None or not len(rows):
            continue
        ts = rows.cols["storeTimestamp"][rows.offsets >= part.start]
        if len(ts):
            count += len(ts)
            first = int(ts[0]) if first is None else first
            last = int(ts[-1])
    return {"from": part.start, "upto": part.end, "bytes": part.end - part.start, "messages": count,
            "firstStoreTimestamp": first, "lastStoreTimestamp": last}


# -- consume queues -------------------------------------------------------------------------------------
@dataclass
class QueueDiff:
    topic: str
    queue_id: int
    equal: int = 0
    expected: int = 0  # fillers (or entries before the log) on the side whose log starts later
    different: int = 0
    only_a: int = 0
    only_b: int = 0
    first_different: int | None = None
    entries: dict = field(default_factory=dict)  # the entries of both sides at `first_different`

    def to_json(self) -> dict:
        return {"topic": self.topic, "queueId": self.queue_id, "equal": self.equal, "expected": self.expected,
                "different": self.different, "onlyA": self.only_a, "onlyB": self.only_b,
                "firstDifferent": self.first_different, **({"entries": self.entries} if self.entries else {})}


def _queue_stream(reader: StoreReader, topic: str, qid: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    if qid not in reader.queue_ids(topic):
        return iter(())
    return reader.consume_queue(topic, qid)


def _entry_json(e) -> dict:
    return {"commitLogOffset": int(e["commitLogOffset"]), "size": int(e["size"]), "tagsCode": int(e["tagsCode"])}


def diff_queue(a: StoreReader, b: StoreReader, topic: str, qid: int, later: str | None, later_start: int) \
        -> QueueDiff:
    """One queue's entries side by side over the queue offsets both hold; `later` names the side whose log
    starts later (None: both start together), `later_start` where."""
    out = QueueDiff(topic, qid)
    for qoffs, ea, eb in _aligned(_queue_stream(a, topic, qid), _queue_stream(b, topic, qid), out):
        same = ea == eb
        if later is not None:
            mine, other = (ea, eb) if later == "a" else (eb, ea)
            filler = (mine["size"] == consumequeue.FILLER_SIZE) & (mine["commitLogOffset"] == 0) \
                & (mine["tagsCode"] == 0)
            before = (filler | (mine["commitLogOffset"] < later_start)) & (other["commitLogOffset"] < later_start)
            expected = ~same & before
        else:
            expected = np.zeros(len(same), dtype=bool)
        wrong = ~same & ~expected
        out.equal += int(same.sum())
        out.expected += int(expected.sum())
        if wrong.any():
            out.different += int(wrong.sum())
            i = int(np.argmax(wrong))
            if out.first_different is None:
                out.first_different = int(qoffs[i])
                out.entries = {"a": _entry_json(ea[i]), "b": _entry_json(eb[i])}
    return out


def _aligned(sa, sb, out: QueueDiff) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(queue offsets, A's entries, B's entries) where both hold the queue offsets; the entries only one
    side holds are counted in `out` (queue offsets ascend on each side)."""
    qa, ea = _next_part(sa)
    qb, eb = _next_part(sb)
    while qa is not None and qb is not None:
        top = min(int(qa[-1]), int(qb[-1]))
        na, nb = int(np.searchsorted(qa, top, "right")), int(np.searchsorted(qb, top, "right"))
        both, pa, pb = _overlap(qa[:na], qb[:nb])
        out.only_a += na - len(both)
        out.only_b += nb - len(both)
        if len(both):
            yield both, ea[pa], eb[pb]
        qa, ea = (qa[na:], ea[na:]) if na < len(qa) else _next_part(sa)
        qb, eb = (qb[nb:], eb[nb:]) if nb < len(qb) else _next_part(sb)
    out.only_a += _left(qa, sa)
    out.only_b += _left(qb, sb)


def _overlap(qa: np.ndarray, qb: np.ndarray) -> tuple[np.ndarray, slice | np.ndarray, slice | np.ndarray]:
    """The queue offsets both ascending arrays hold, and where they are in each: slices when both are runs
    without gaps (a queue file's entries), else the positions an intersection finds."""
    if len(qa) and len(qb) and qa[-1] - qa[0] == len(qa) - 1 and qb[-1] - qb[0] == len(qb) - 1:
        lo, hi = max(int(qa[0]), int(qb[0])), min(int(qa[-1]), int(qb[-1])) + 1
        if lo >= hi:
            return qa[:0], slice(0, 0), slice(0, 0)
        return (qa[lo - int(qa[0]) : hi - int(qa[0])], slice(lo - int(qa[0]), hi - int(qa[0])),
                slice(lo - int(qb[0]), hi - int(qb[0])))
    return np.intersect1d(qa, qb, assume_unique=True, return_indices=True)


def _left(qoffs: np.ndarray | None, stream) -> int:
    """The entries of a side left once the other ran out: the part at hand and the rest of its stream."""
    return (len(qoffs) if qoffs is not None else 0) + sum(len(part) for part, _ in stream)


def _next_part(stream) -> tuple[np.ndarray | None, np.ndarray | None]:
    for qoffs, entries in stream:
        if len(qoffs):
            return qoffs, entries
    return None, None


def diff_queues(a: StoreReader, b: StoreReader, ea: Extent, eb: Extent) -> list[QueueDiff]:
    later, later_start = (None, 0) if ea.start == eb.start else (("a", ea.start) if ea.start > eb.start
                                                                 else ("b", eb.start))
    topics = sorted(set(a.topics()) | set(b.topics()))
    out = []
    for topic in topics:
        for qid in sorted(set(a.queue_ids(topic)) | set(b.queue_ids(topic))):
            out.append(diff_queue(a, b, topic, qid, later, later_start))
    return out


# -- index ----------------------------------------------------------------------------------------------
@dataclass
class IndexDiff:
    entries_a: int = 0
    entries_b: int = 0
    matched: int = 0
    first_unmatched: int | None = None  # the lowest phyOffset of an entry one side has and the other lacks
    out_of_order_a: int = 0  # entries met after the stretch of the log they point into was compared
    out_of_order_b: int = 0
    unreadable: list[str] = field(default_factory=list)

    @property
    def only_a(self) -> int:
        return self.entries_a - self.matched

    @property
    def only_b(self) -> int:
        return self.entries_b - self.matched

    def to_json(self) -> dict:
        return {"entriesA": self.entries_a, "entriesB": self.entries_b, "matched": self.matched,
                "onlyA": self.only_a, "onlyB": self.only_b, "firstUnmatchedOffset": self.first_unmatched,
                "outOfOrderA": self.out_of_order_a, "outOfOrderB": self.out_of_order_b,
                "unreadableFiles": self.unreadable}


def _index_pairs(reader: StoreReader, part: Extent, unreadable: list[str]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(phyOffset, keyHash) of the index entries that point into `part`, file by file in name order,
    INDEX_CHUNK entries at a time with the pages passed given back."""
    for path in reader.index_paths():
        try:
            view = reader.index_file(path)
        except RmqError:
            unreadable.append(str(path))
            continue
        entries = view.entries()
        for i in range(0, len(entries), INDEX_CHUNK):
            rows = entries[i : i + INDEX_CHUNK]
            phy, key = rows["phyOffset"].astype(np.int64), rows["keyHash"].astype(np.int32)
            release_pages(view.buf, index.entry_position(view.hash_slots, i + 1),
                          index.entry_position(view.hash_slots, i + 1 + len(rows)))
            keep = (phy >= part.start) & (phy < part.end)
            if not keep.all():
                phy, key = phy[keep], key[keep]
            if len(phy):
                yield phy, key
        del entries, view


class _PairStream:
    """One side's index pairs in phyOffset order, buffered; pairs below what was compared already count as
    out of order (and stay unmatched)."""

    def __init__(self, pairs: Iterator[tuple[np.ndarray, np.ndarray]]) -> None:
        self.pairs = pairs
        self.phy = np.zeros(0, dtype=np.int64)
        self.key = np.zeros(0, dtype=np.int32)
        self.done = False
        self.floor = -1  # everything below it was compared
        self.late = 0

    def pull(self) -> None:
        got = next(self.pairs, None)
        if got is None:
            self.done = True
            return
        phy, key = got
        if int(phy.min()) < self.floor:
            late = phy < self.floor
            self.late += int(late.sum())
            phy, key = phy[~late], key[~late]
        in_order = not len(self.phy) or not len(phy) or phy[0] >= self.phy[-1]
        in_order = in_order and not (phy[1:] < phy[:-1]).any()
        if len(self.phy):
            phy, key = np.concatenate([self.phy, phy]), np.concatenate([self.key, key])
        if not in_order:
            order = np.argsort(phy, kind="stable")
            phy, key = phy[order], key[order]
        self.phy, self.key = phy, key

    def fill(self) -> None:
        while not self.done and not len(self.phy):
            self.pull()

    def horizon(self) -> float:
        """Pairs below it are all here (the stream is in order)."""
        return float("inf") if self.done else float(self.phy[-1])

    def take_below(self, bound: float) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.phy) if bound == float("inf") else int(np.searchsorted(self.phy, bound, "left"))
        taken = self.phy[:n], self.key[:n]
        self.phy, self.key = self.phy[n:], self.key[n:]
        if bound != float("inf"):
            self.floor = max(self.floor, int(bound))
        return taken


def diff_index(a: StoreReader, b: StoreReader, common: Extent | None) -> IndexDiff:
    """Both sides' index entries that point into `common`, as multisets of (keyHash, phyOffset)."""
    if common is None:
        return IndexDiff()
    unreadable: list[str] = []
    out = match_pairs(_index_pairs(a, common, unreadable), _index_pairs(b, common, unreadable))
    out.unreadable = unreadable
    return out


def match_pairs(pairs_a: Iterator[tuple[np.ndarray, np.ndarray]], pairs_b: Iterator[tuple[np.ndarray, np.ndarray]]) \
        -> IndexDiff:
    """Two streams of (phyOffset, keyHash) chunks, each in phyOffset order, matched a stretch at a time: the
    stretch below the smaller of the two sides' highest offsets read so far is complete on both."""
    out = IndexDiff()
    sa, sb = _PairStream(pairs_a), _PairStream(pairs_b)
    while True:
        sa.fill()
        sb.fill()
        if sa.done and sb.done and not len(sa.phy) and not len(sb.phy):
            break
        bound = min(sa.horizon(), sb.horizon())
        pa, pb = sa.take_below(bound), sb.take_below(bound)
        if not len(pa[0]) and not len(pb[0]):  # everything buffered sits at the bound: read on
            for s in (sa, sb):
                if not s.done and s.horizon() == bound:
                    s.pull()
            continue
        _match(out, pa, pb)
    out.entries_a += sa.late
    out.entries_b += sb.late
    out.out_of_order_a, out.out_of_order_b = sa.late, sb.late
    return out


def _match(out: IndexDiff, pa: tuple[np.ndarray, np.ndarray], pb: tuple[np.ndarray, np.ndarray]) -> None:
    """Count one stretch's pairs as multisets: in the same order on both sides (the common case) at once,
    else as sorted (phyOffset, keyHash) keys."""
    out.entries_a += len(pa[0])
    out.entries_b += len(pb[0])
    if len(pa[0]) == len(pb[0]) and np.array_equal(pa[0], pb[0]) and np.array_equal(pa[1], pb[1]):
        out.matched += len(pa[0])
        return
    base = min(pa[0][:1].tolist() + pb[0][:1].tolist())
    ka, kb = _keys(pa, base), _keys(pb, base)
    ua, ca = np.unique(ka, return_counts=True)
    ub, cb = np.unique(kb, return_counts=True)
    _, ia, ib = np.intersect1d(ua, ub, assume_unique=True, return_indices=True)
    both = np.minimum(ca[ia], cb[ib])
    out.matched += int(both.sum())
    ca[ia] -= both
    cb[ib] -= both
    lost = [_offset_of(u[c > 0][0]) for u, c in ((ua, ca), (ub, cb)) if (c > 0).any()]
    if lost and out.first_unmatched is None:
        out.first_unmatched = base + min(lost)


_KEY_BITS = 32  # keyHash (abs of a Java hash) takes 31 bits; the offset goes above them


def _keys(pairs: tuple[np.ndarray, np.ndarray], base: int) -> np.ndarray:
    """(phyOffset - base) << 32 | keyHash as one sortable int64 (offsets within 2 GiB of `base`), or both as
    one 16-byte big-endian value (which sorts as the pair does) where the stretch is wider."""
    phy, key = pairs
    rel, key = phy - base, key.astype(np.int64) & 0xFFFFFFFF
    if not len(rel) or int(rel.max()) < (1 << 31):
        return (rel << _KEY_BITS) | key
    both = np.stack([rel, key], axis=1)
    return np.ascontiguousarray(both.astype(">i8")).view("S16").ravel()


def _offset_of(key) -> int:
    """The offset (from the stretch's base) a `_keys` value holds."""
    if isinstance(key, bytes):  # numpy drops trailing zero bytes of an S16 value
        return int.from_bytes(key.ljust(16, b"\0")[:8], "big")
    return int(key) >> _KEY_BITS


# -- the whole ------------------------------------------------------------------------------------------
def ha_epochs(a: StoreReader, b: StoreReader, ea: Extent, eb: Extent) -> dict | None:
    """The 5.x controller-mode view of the pair, when both keep an epoch file: each side's epochs and HA
    checkpoint offsets, and where the broker's own rule says their logs stop agreeing (the newest epoch
    both hold with one start, ended at the earlier of the two ends; -1: no epoch in common). None when
    either side has no epoch file (4.x and 5.x default-mode stores keep none)."""
    from rmqtool.structures import epoch
    from rmqtool.structures.epoch.state import ha_state

    states = [ha_state(r.paths.root) for r in (a, b)]
    if any(st.epochs is None or st.epochs.source is None for st in states):
        return None
    out: dict = {side: {"epochs": [e.to_json() for e in st.epochs.entries], "masterFlushedOffset":
                        st.masterFlushedOffset, "confirmPhyOffset": st.confirmPhyOffset}
                 for side, st in zip(SIDES, states, strict=True)}
    out["consistentPoint"] = epoch.consistent_point(states[0].epochs.entries, ea.end, states[1].epochs.entries, eb.end)
    return out


def diff_stores(path_a: str | os.PathLike, path_b: str | os.PathLike, config_a: str | os.PathLike | None = None,
                config_b: str | os.PathLike | None = None) -> dict:
    """The JSON document of `diff` (see docs/json-schema.md)."""
    a, b = open_root_reader(path_a, config_a), open_root_reader(path_b, config_b)
    try:
        size = segment_size(a, b)
        ea, eb = log_extent(a), log_extent(b)
        common = common_range(ea, eb)
        with ThreadPoolExecutor(max_workers=1) as pool:  # queues and index on a second core while the log is read
            others = pool.submit(lambda: (diff_queues(a, b, ea, eb), diff_index(a, b, common)))
            diff_at = first_difference(a, b, common, size) if common else None
            queues, idx = others.result()
        doc: dict = {
            "a": {"store": str(a.paths.root), "from": ea.start, "upto": ea.end},
            "b": {"store": str(b.paths.root), "from": eb.start, "upto": eb.end},
            "segmentSize": size,
            "common": {"from": common.start if common else None, "upto": common.end if common else None,
                       "bytes": common.end - common.start if common else 0, "identical": diff_at is None,
                       "firstDifference": diff_at},
        }
        if diff_at is not None:
            records = {side: record_json(r, containing_record(r, diff_at))
                       for side, r in zip(SIDES, (a, b), strict=True)}
            doc["common"]["divergesAt"] = min(r["offset"] for r in records.values())
            doc["common"]["records"] = records
            doc["common"]["differingFields"] = differing_fields(records["a"], records["b"])
        doc["onlyA"] = [held_messages(a, p) for p in beyond(ea, common)]
        doc["onlyB"] = [held_messages(b, p) for p in beyond(eb, common)]
        doc["consumeQueues"] = {"queues": len(queues), **{k: sum(getattr(q, f) for q in queues) for k, f in (
            ("equal", "equal"), ("expected", "expected"), ("different", "different"), ("onlyA", "only_a"),
            ("onlyB", "only_b"))}, "perQueue": [q.to_json() for q in queues]}
        doc["index"] = idx.to_json()
        ha = ha_epochs(a, b, ea, eb)
        if ha is not None:
            doc["epochs"] = ha
        doc["identical"] = diff_at is None and doc["consumeQueues"]["different"] == 0 and idx.only_a == 0 \
            and idx.only_b == 0
        return doc
    finally:
        a.queues.close()
        b.queues.close()
