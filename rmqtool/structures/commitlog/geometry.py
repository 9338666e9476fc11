"""The commitlog's segment size as its files show it: segments are named by their start offset,
so the distance between two names is the size the broker wrote them with."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from rmqtool.files.paths import offset_name
from rmqtool.report import COMMITLOG, Finding
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.message import BLANK_MARKER_LEN, MIN_RECORD_LEN

MIN_SEGMENT_SIZE = MIN_RECORD_LEN + BLANK_MARKER_LEN  # a segment must hold one record and its end marker


OVERLAPPING, MISSING, SIZE = "overlapping-segment", "missing-segment", "segment-size"
KINDS = (OVERLAPPING, MISSING, SIZE)
REFUSED_AT_START = (SIZE,)  # the broker does not start on a segment of another size


class Segment(Protocol):
    path: Path
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


def next_start(prev: Segment, size: int) -> int:
    """Where the segment after `prev` starts: segments of `size` bytes follow each other without a gap."""
    return prev.start + size


def holes(segments: Sequence[Segment], size: int) -> list[tuple[int, int]]:
    """[from, to) of each stretch of the log between its first and last segment that no segment holds:
    where the next segment should have started, and where the next one present does."""
    return [(next_start(prev, size), seg.start) for prev, seg in itertools.pairwise(segments)
            if seg.start > next_start(prev, size)]


def missing_starts(hole: tuple[int, int], size: int) -> range:
    """The starts (and so the names) of the segments missing in `hole`."""
    return range(hole[0], hole[1], size) if size > 0 else range(0)


def missing_segment_at(segments: Sequence[Segment], size: int, offset: int) -> tuple[int, int] | None:
    """(start, end) of the missing segment that would hold `offset`, when `offset` falls in a hole."""
    for low, high in holes(segments, size):
        if low <= offset < high:
            start = low + (offset - low) // size * size
            return start, min(start + size, high)
    return None


def cut_part_at(segments: Sequence[Segment], size: int, offset: int) -> tuple[Segment, int, int] | None:
    """(segment, from, to) when `offset` falls in the part of the log a truncated segment lost: past the file's
    end, before where a segment of `size` bytes ends (where the next one starts)."""
    for seg in segments:
        lost_from, lost_to = seg.start + seg.size, next_start(seg, size)
        if lost_from <= offset < lost_to:
            return seg, lost_from, lost_to
    return None


def covered(segments: Sequence[Segment]) -> list[tuple[int, int]]:
    """[from, to) of each stretch of the log the files hold, touching files joined: a missing segment and the
    part a truncated one lost both lie between two stretches."""
    out: list[tuple[int, int]] = []
    for seg in segments:
        if out and seg.start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], seg.start + seg.size))
        else:
            out.append((seg.start, seg.start + seg.size))
    return out


def start_from_first_record(buf) -> int | None:
    """The start of a segment whose name is not an offset: its first record's physicalOffset field (a
    record's offset is its segment's start plus its position, here 0), when it is a multiple of the file's
    size as every segment start is; None when no record starts at byte 0 or its field is no such start."""
    first = message.decode(buf, 0, verify_crc=False)
    if isinstance(first, message.Message) and first.physical_offset >= 0 and len(buf) \
            and first.physical_offset % len(buf) == 0:
        return first.physical_offset
    return None


def sequence_findings(segments: Sequence[Segment], size: int, *, single_file: bool = False) -> list[Finding]:
    """Missing segments (one finding per file that should be there, named by that file), overlapping
    segments, and segments whose size is not `size` (the store's)."""
    out = []
    for prev, seg in itertools.pairwise(segments):
        expected = next_start(prev, size)
        if seg.start < expected:
            out.append(Finding(str(seg.path), seg.start, f"segment starts at {seg.start}, inside {prev.path.name} "
                               f"(segments are {size} bytes)", expected - seg.start, structure=COMMITLOG,
                               kind=OVERLAPPING))
        for start in missing_starts((expected, seg.start), size):
            out.append(Finding(str(prev.path.parent / offset_name(start)), start, "gap in the segment sequence: "
                               f"next segment starts at {seg.start}", min(size, seg.start - start),
                               structure=COMMITLOG, kind=MISSING))
    for seg in segments:
        if seg.size != size and not single_file:
            out.append(Finding(str(seg.path), seg.start, f"segment is {seg.size} bytes, expected {size}",
                               abs(size - seg.size), structure=COMMITLOG, kind=SIZE))
    return out


def size_refusal_line(path: str, actual: int, size: int, given: frozenset[str]) -> str:
    """The broker's refusal of a segment of `actual` bytes in a log of `size`-byte segments, in one line.
    `given` are the keys the broker.conf set (none: no broker.conf was given). Without one the size is the
    files' own, which the store's broker.conf settles; with one the size stands and the file is damaged."""
    if not given:
        return (f"{path}: segment is {actual} bytes, expected {size} (mappedFileSizeCommitLog={size}): the broker "
                "refuses to start (pass the store's broker.conf with --config)")
    short = actual < size
    diff = f"{abs(size - actual)} bytes {'shorter' if short else 'longer'}"
    than = (f"mappedFileSizeCommitLog={size} of the given config" if "mappedFileSizeCommitLog" in given else
            f"the store's other segments ({size} bytes; the given config does not set mappedFileSizeCommitLog)")
    damage = "truncated" if short else "bytes written past its size"
    return (f"{path}: segment is {actual} bytes, {diff} than {than}: the file itself is damaged ({damage}) and the "
            "broker refuses to start on it")


def store_findings(reader) -> list[Finding]:
    """The sequence rule over a reader's segments (the registry's hook)."""
    return sequence_findings(reader.segments, reader.segment_size, single_file=reader.single_file)
