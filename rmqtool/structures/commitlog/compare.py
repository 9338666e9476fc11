"""The commitlog of two replicas compared (`diff`).

Each side holds [its first segment's start, the end of its records); the range both hold is compared
segment by segment, CHUNK bytes of both maps at a time as 64-bit words (memcmp speed, pages given back as
they are passed), down to the first differing byte, and the record holding that byte is decoded on both
sides: where it starts is where the logs diverge (two records of other sizes at one offset differ first
inside their totalSize field, a byte or two past the boundary). What one side holds beyond the other is
told as ranges with their messages and first and last store times. Both must have the same segment size,
their segments starting at multiples of it (a slave names its files as its master does).
"""

from __future__ import annotations

import numpy as np

from rmqtool.files.segments import open_read_only, release_pages
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.geometry import segment_size_of
from rmqtool.structures.replicas import Comparison, Extent, Pair
from rmqtool.structures.view import StoreView

CHUNK = 8 << 20  # bytes compared between two page releases


def shared_segment_size(a: StoreView, b: StoreView) -> int:
    """The segment size of the pair: the one its segments show (a side without segments takes the other's)."""
    shown = [segment_size_of(r.segments)[0] for r in (a, b)]
    return next((s for s in shown if s is not None), a.segment_size)


def pair_refusal(a: StoreView, b: StoreView) -> str | None:
    """Why two logs cannot be compared: different segment sizes, or a segment not at a multiple of the size."""
    shown = [segment_size_of(r.segments)[0] for r in (a, b)]
    if None not in shown and shown[0] != shown[1]:
        return (f"segment sizes differ: {a.paths.root} has {shown[0]}-byte segments, {b.paths.root} "
                f"{shown[1]}-byte ones: replicas share their master's geometry")
    size = shared_segment_size(a, b)
    for r in (a, b):
        for seg in r.segments:
            if seg.start % size:
                return f"{seg.path}: starts at {seg.start}, not at a multiple of the segment size {size}"
    return None


def beyond(side: Extent, common: Extent | None) -> list[Extent]:
    """The parts of `side` outside `common`: a head before it and a tail after it."""
    if common is None:
        return [side] if side.start < side.end else []
    parts = [Extent(side.start, min(side.end, common.start)), Extent(max(side.start, common.end), side.end)]
    return [p for p in parts if p.start < p.end]


def first_difference(a: StoreView, b: StoreView, common: Extent, size: int) -> int | None:
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


def containing_record(reader: StoreView, offset: int) -> int:
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


def record_json(reader: StoreView, offset: int) -> dict:
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


def held_messages(reader: StoreView, part: Extent) -> dict:
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


def compare(pair: Pair) -> Comparison:
    """`segmentSize`, `common` (the range both hold, its first differing byte and the records there) and
    `onlyA`/`onlyB` (what each holds beyond it); the sides agree when the common range is identical."""
    common = pair.common
    size = shared_segment_size(pair.a, pair.b)
    diff_at = first_difference(pair.a, pair.b, common, size) if common else None
    section: dict = {"from": common.start if common else None, "upto": common.end if common else None,
                     "bytes": common.end - common.start if common else 0, "identical": diff_at is None,
                     "firstDifference": diff_at}
    if diff_at is not None:
        records = {side: record_json(r, containing_record(r, diff_at)) for side, r, _ in pair.sides()}
        section["divergesAt"] = min(r["offset"] for r in records.values())
        section["records"] = records
        section["differingFields"] = differing_fields(records["a"], records["b"])
    only_a, only_b = ([held_messages(r, p) for p in beyond(held, common)] for _, r, held in pair.sides())
    return Comparison({"segmentSize": size, "common": section, "onlyA": only_a, "onlyB": only_b},
                      agree=diff_at is None)
