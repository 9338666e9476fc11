"""The commitlog's part of the broker's cleanup (CleanCommitLogService): which segments expire.

A segment other than the newest expires when its modification time is more than `fileReservedTime`
hours old; the broker deletes from the oldest and stops at the first segment it keeps, so what is
left starts the log (the minimum offset the other structures' orphans are measured against).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rmqtool.files.segments import list_segments

MS_PER_HOUR = 3_600_000


@dataclass
class Expiry:
    """The segments that expire, (file, reason) oldest first, and where the log starts before and after."""

    files: list[tuple[str, str]] = field(default_factory=list)
    min_offset_before: int = 0
    min_offset: int = 0


def expired_segments(directory: Path, now_ms: int, reserved_hours: float) -> Expiry:
    """What expires of the segments in `directory` at `now_ms`, kept for `reserved_hours`."""
    segments = list_segments(directory)
    found = Expiry(min_offset_before=segments[0].start if segments else 0)
    kept = list(segments)
    for seg in segments[:-1]:
        mtime = seg.path.stat().st_mtime_ns // 1_000_000
        if now_ms < mtime + reserved_hours * MS_PER_HOUR:
            break  # the broker deletes from the oldest and stops at the first file it keeps
        found.files.append((str(seg.path), f"modified more than fileReservedTime={reserved_hours} h ago"))
        kept.remove(seg)
    found.min_offset = kept[0].start if kept else 0
    return found
