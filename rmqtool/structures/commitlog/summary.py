"""The commitlog's `info` section: its segments, holes, and first and last record, from two scans (the first
segment and the last that holds a record), never the whole log.

`view` is the store being read: `segments`, `segment_size`, `holes()`, `scan(...)` and `paths.commitlog`.
"""

from __future__ import annotations

from rmqtool.files.paths import offset_name
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.geometry import missing_starts
from rmqtool.structures.view import StoreView


def section(view: StoreView) -> dict:
    segs = view.segments
    out: dict = {"directory": str(view.paths.commitlog), "segments": len(segs), "segmentSize": view.segment_size,
                 "holes": [_hole(low, high, view.segment_size) for low, high in view.holes()]}
    if not segs:
        return out
    first = _edge_record(view, segs[0].start, last=False)
    last = None
    for k in range(len(segs) - 1, -1, -1):
        last = _edge_record(view, segs[k].start, last=True, until=segs[k].end)
        if last is not None:
            last = (broker_end(segs, k, last[0]), last[1])
            break
    if first is not None:
        out["firstOffset"], out["firstStoreTimestamp"] = first
    if last is not None:
        end, ts = last
        out["endOffset"], out["lastStoreTimestamp"] = end, ts
        if first is not None:
            out["dataBytes"] = end - first[0]
    return out


def broker_end(segs: list, k: int, record_end: int) -> int:
    """The log's end as the broker's recovery finds it (its max physical offset), given where the last record of
    segment `k` ends: an end-of-segment marker there sends the walk to the next segment, whose start is then the
    end when that segment holds no record (an empty segment the broker rolled to); without a next segment, or
    without the marker, the end is where the record ends."""
    seg = segs[k]
    if k + 1 >= len(segs):
        return record_end
    with open(seg.path, "rb") as f:
        f.seek(record_end - seg.start)
        head = f.read(message.PREFIX.size)
    if len(head) == message.PREFIX.size and message.PREFIX.unpack(head)[1] == message.BLANK_MAGIC:
        return segs[k + 1].start
    return record_end


def _edge_record(view: StoreView, start: int, *, last: bool, until: int | None = None) -> tuple[int, int] | None:
    """(offset, storeTimestamp) of the first good record from `start` on, or (end offset,
    storeTimestamp) of the last good record of the segment at `start` (`last`)."""
    found = None
    for chunk in view.scan(start, verify_crc=False, until=until):
        b = chunk.batch
        if b is None or not len(b):
            continue
        ts = b.cols["storeTimestamp"]
        if not last:
            return int(b.offsets[0]), int(ts[0])
        found = (int(b.offsets[-1] + b.cols["totalSize"][-1]), int(ts[-1]))
    return found


def _hole(low: int, high: int, size: int) -> dict:
    """A stretch [low, high) of the log no segment holds, with the names of the segment files missing there."""
    return {"from": low, "to": high, "missing": [offset_name(s) for s in missing_starts((low, high), size)]}
