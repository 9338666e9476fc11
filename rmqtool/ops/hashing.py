"""`hash`: one digest of a commitlog byte range, so two hosts compare their replicas without copying them.

The digest is xxh3_128 (the `xxhash` package) of the bytes of [from, upto) fed in log order into one
streaming hasher: it depends on those bytes only, never on where the segment files split them, so a
master and its slave agree over a range both hold whatever their files. xxh3 hashes faster than memory
delivers bytes (tens of GB/s a core), so the digest costs what reading the range costs; it is not a
security hash: replicas are compared against corruption and divergence, not against an adversary who
forges collisions (a cryptographic hash would run at a tenth of the speed for a guarantee nobody asked).

The bytes are read through read-only maps of the segments, CHUNK at a time; the pages passed are given
back (`release_pages`), so resident memory stays a chunk whatever the range. What a store holds, here
and in `diff`, is [start of its first segment, end of its last record) (`log_extent`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rmqtool.engine.reader import StoreReader, open_root_reader
from rmqtool.errors import RmqError
from rmqtool.files.segments import SegmentFile, open_read_only, release_pages
from rmqtool.structures.replicas import Extent

ALGORITHM = "xxh3_128"
CHUNK = 8 << 20  # bytes hashed between two page releases


def log_extent(reader: StoreReader) -> Extent:
    """From the first segment's start to the end of its records. The newest segment holding a record is walked
    from its start along totalSize (the scanner's compiled walk) to where the chain stops: the unwritten zeros
    or a record that is not one, as the broker's recovery finds its max offset, or a blank marker, which holds
    the rest of its segment. Only that segment is read, and nothing past where the walk stops: a copied
    segment whose unwritten tail is real zeros rather than a hole costs what a sparse one does."""
    if not reader.segments:
        return Extent(0, 0)
    start = reader.segments[0].start
    for seg in reversed(reader.segments):
        end = _chain_end(reader, seg)
        if end:
            return Extent(start, seg.start + end)
    return Extent(start, start)


WALK_WINDOW = 8 << 20


def _chain_end(reader: StoreReader, seg: SegmentFile) -> int:
    """Where the walk of the records of `seg` from its start stops (0: no record there)."""
    if reader.dledger:  # records wrapped in entries: the scanner unwraps them
        rows = [c.batch for c in reader.scan(seg.start, verify_crc=False, until=seg.end)
                if c.batch is not None and len(c.batch)]
        return int(rows[-1].offsets[-1] + rows[-1].cols["totalSize"][-1]) - seg.start if rows else 0
    import numpy as np

    from rmqtool.structures.commitlog.walker import Rows, walk_on  # start-up: loads numba; lookups ask log_extent

    with open_read_only(seg.path) as buf:
        arr = np.frombuffer(buf, dtype=np.uint8)
        out = Rows.room(WALK_WINDOW)
        end = released = 0
        for step in walk_on(arr, 0, None, seg.start, out, window=WALK_WINDOW):
            end = len(arr) if step.blank else step.stop  # a blank marker fills the segment
            released = release_pages(buf, released, step.stop)
        del arr
    return end


def pieces(reader: StoreReader, lo: int, hi: int) -> Iterator[tuple[SegmentFile, int, int]]:
    """(segment, from, to) covering [lo, hi) in order, positions inside each segment's file; a byte no
    segment file holds (a missing segment, a cut file) is refused."""
    at = lo
    while at < hi:
        seg = reader.segment_for(at)
        if seg is None or seg.end <= at:
            raise RmqError(f"no segment file of {reader.paths.commitlog} holds offset {at} "
                           f"({reader.describe_range()})")
        end = min(hi, seg.end)
        yield seg, at - seg.start, end - seg.start
        at = end


@dataclass
class RangeDigest:
    store: str
    start: int
    end: int
    digest: str
    holds: Extent

    def to_json(self) -> dict:
        return {"store": self.store, "from": self.start, "upto": self.end, "bytes": self.end - self.start,
                "algorithm": ALGORITHM, "digest": self.digest,
                "holds": {"from": self.holds.start, "upto": self.holds.end}}


def digest_range(reader: StoreReader, lo: int, hi: int) -> str:
    """xxh3_128 (hex) of the commitlog bytes [lo, hi), streamed from the mapped segments."""
    import xxhash

    hasher = xxhash.xxh3_128()
    for seg, start, end in pieces(reader, lo, hi):
        with open_read_only(seg.path) as buf:
            view = memoryview(buf)
            released = start
            for at in range(start, end, CHUNK):
                stop = min(at + CHUNK, end)
                hasher.update(view[at:stop])
                released = release_pages(buf, released, stop)
            view.release()
    return hasher.hexdigest()


def hash_store(path: str | os.PathLike, start: int | None = None, end: int | None = None,
               config: str | os.PathLike | None = None) -> RangeDigest:
    """The digest of [start, end) of the store at `path` (defaults: all it holds); a range outside what it
    holds is refused, naming what it holds."""
    reader = open_root_reader(path, config)
    holds = log_extent(reader)
    lo = holds.start if start is None else start
    hi = holds.end if end is None else end
    if lo < holds.start or hi > holds.end or lo > holds.end:
        raise RmqError(f"[{lo}, {hi}) is outside what {Path(path)} holds: {holds}")
    if lo > hi:
        raise RmqError(f"--from {lo} is past --upto {hi}")
    return RangeDigest(str(reader.paths.root), lo, hi, digest_range(reader, lo, hi), holds)
