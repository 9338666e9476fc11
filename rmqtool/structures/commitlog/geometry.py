"""The commitlog's segment size as its files show it: segments are named by their start offset,
so the distance between two names is the size the broker wrote them with."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from rmqtool.structures.commitlog.message import BLANK_MARKER_LEN, MIN_RECORD_LEN

MIN_SEGMENT_SIZE = MIN_RECORD_LEN + BLANK_MARKER_LEN  # a segment must hold one record and its end marker


class Segment(Protocol):
    start: int
    size: int


def segment_size_of(segments: Sequence[Segment]) -> tuple[int | None, bool]:
    """(size, confirmed): the segment size the files show, and whether names confirm it.

    Two neighbours whose names are one file's size apart confirm that size (a missing segment
    makes a larger distance, a cut file a smaller size, and neither agrees with itself). Without
    such a pair the most common file size is the answer, unconfirmed."""
    pairs = Counter(a.size for a, b in itertools.pairwise(segments) if a.size > 0 and b.start - a.start == a.size)
    if pairs:
        return pairs.most_common(1)[0][0], True
    sizes = Counter(s.size for s in segments if s.size > 0)
    return (sizes.most_common(1)[0][0], False) if sizes else (None, False)


def size_refusal(size: int) -> str | None:
    """Why the broker could not run with segments of `size` bytes (None when it could)."""
    if size < MIN_SEGMENT_SIZE:
        return f"mappedFileSizeCommitLog={size} is smaller than one record ({MIN_SEGMENT_SIZE} bytes)"
    return None
