"""The index of two replicas compared (`diff`, and `rebuild` against its staged index).

The (keyHash, phyOffset) pairs of both sides' entries inside the log range both hold, as multisets.
Index entries are written in log order (the broker skips a record below a file's endPhyOffset), so both
sides are read as streams in phyOffset order and compared a stretch at a time: flat memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from rmqtool.errors import RmqError
from rmqtool.files.segments import release_pages
from rmqtool.structures.index import entry_position
from rmqtool.structures.replicas import Comparison, Extent, Pair
from rmqtool.structures.view import StoreView

INDEX_CHUNK = 1 << 20  # index entries read between two page releases


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


def _index_pairs(reader: StoreView, part: Extent, unreadable: list[str]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
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
            release_pages(view.buf, entry_position(view.hash_slots, i + 1),
                          entry_position(view.hash_slots, i + 1 + len(rows)))
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


def diff_index(a: StoreView, b: StoreView, common: Extent | None) -> IndexDiff:
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


def compare(pair: Pair) -> Comparison:
    """`index`: the entries into the common range matched; the sides agree when each has a match."""
    found = diff_index(pair.a, pair.b, pair.common)
    return Comparison({"index": found.to_json()}, agree=found.only_a == 0 and found.only_b == 0)
