"""The commitlog's `info` section: its segments, holes, and first and last record, from two scans (the first
segment and the last that holds a record), never the whole log.

`view` is the store being read: `segments`, `segment_size`, `holes()`, `scan(...)` and `paths.commitlog`.
"""

from __future__ import annotations

from typing import Any


def section(view: Any) -> dict:
    segs = view.segments
    out: dict = {"directory": str(view.paths.commitlog), "segments": len(segs), "segmentSize": view.segment_size,
                 "holes": [_hole(low, high, view.segment_size) for low, high in view.holes()]}
    if not segs:
        return out
    first = _edge_record(view, segs[0].start, last=False)
    last = None
    for seg in reversed(segs):
        last = _edge_record(view, seg.start, last=True, until=seg.end)
        if last is not None:
            break
    if first is not None:
        out["firstOffset"], out["firstStoreTimestamp"] = first
    if last is not None:
        end, ts = last
        out["endOffset"], out["lastStoreTimestamp"] = end, ts
        if first is not None:
            out["dataBytes"] = end - first[0]
    return out


def _edge_record(view: Any, start: int, *, last: bool, until: int | None = None) -> tuple[int, int] | None:
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
    from rmqtool.files.paths import offset_name
    from rmqtool.structures.commitlog.geometry import missing_starts

    return {"from": low, "to": high, "missing": [offset_name(s) for s in missing_starts((low, high), size)]}
