"""The broker's expired-file deletion (CleanCommitLogService and CleanConsumeQueueService).

A commitlog segment other than the newest one expires when its modification time is more
than `fileReservedTime` hours old. Deleting expired segments moves the commitlog's minimum
offset; a consume-queue file whose last entry points below it, and an index file whose
endPhyOffset is below it, are orphaned and go too (never a queue's or the index's newest
file, as in the broker).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from rmqtool.format import consumequeue, index
from rmqtool.store.config import StoreConfig
from rmqtool.store.paths import StorePaths, parse_offset_name
from rmqtool.store.segments import list_segments, open_read_only

MS_PER_HOUR = 3_600_000


@dataclass
class CleanPlan:
    deleted: list[tuple[str, str]] = field(default_factory=list)
    min_offset: int = 0

    def to_json(self) -> dict:
        return {"minOffset": self.min_offset, "deletedFiles": [{"file": f, "reason": r} for f, r in self.deleted]}


def plan_clean(root: str | os.PathLike, cfg: StoreConfig, reserved_hours: float | None = None,
               now_ms: int | None = None) -> CleanPlan:
    from rmqtool.store.kind import require_writable

    paths = StorePaths(root, cfg.storePathCommitLog or None)
    require_writable(paths, "clean")
    hours = cfg.fileReservedTime if reserved_hours is None else reserved_hours
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    plan = CleanPlan()
    segments = list_segments(paths.commitlog)
    kept = list(segments)
    for seg in segments[:-1]:
        mtime = seg.path.stat().st_mtime_ns // 1_000_000
        if now < mtime + hours * MS_PER_HOUR:
            break  # the broker deletes from the oldest and stops at the first file it keeps
        plan.deleted.append((str(seg.path), f"older than fileReservedTime={hours} h"))
        kept.remove(seg)
    plan.min_offset = kept[0].start if kept else 0
    if plan.deleted:
        plan.deleted += orphaned_files(paths, plan.min_offset)
    return plan


def orphaned_files(paths: StorePaths, min_offset: int) -> list[tuple[str, str]]:
    """(file, reason) of the consume-queue and index files whose every entry points below `min_offset`
    (never a queue's or the index's newest file)."""
    out = []
    if paths.consumequeue.is_dir():
        for topic_dir in sorted(paths.consumequeue.iterdir()):
            for qdir in sorted(topic_dir.iterdir()) if topic_dir.is_dir() else []:
                files = [p for p in sorted(qdir.iterdir()) if parse_offset_name(p.name) is not None]
                for f in files[:-1]:
                    with open_read_only(f) as buf:
                        entries = consumequeue.decode_entries(buf)
                        n = consumequeue.written_count(entries)
                        last = int(entries["commitLogOffset"][n - 1]) if n else -1
                        del entries
                    if last >= min_offset:
                        break
                    out.append((str(f), f"every entry points below the commitlog minimum {min_offset}"))
    if paths.index.is_dir():
        files = sorted(p for p in paths.index.iterdir() if p.is_file() and index.is_file_name(p.name))
        for f in files[:-1]:
            with open_read_only(f) as buf:
                end = int(index.decode_header(buf)["endPhyOffset"]) if len(buf) >= index.HEADER_LEN else 0
            if end >= min_offset:
                break
            out.append((str(f), f"every entry points below the commitlog minimum {min_offset}"))
    return out


def apply_clean(root: str | os.PathLike, cfg: StoreConfig, plan: CleanPlan) -> None:
    from rmqtool.store.lock import StoreLock

    lock = StoreLock(StorePaths(root, cfg.storePathCommitLog or None), "clean")
    try:
        for f, _ in plan.deleted:
            Path(f).unlink(missing_ok=True)
    finally:
        lock.release()
