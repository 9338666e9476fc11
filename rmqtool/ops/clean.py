"""The broker's expired-file deletion (CleanCommitLogService and CleanConsumeQueueService).

A commitlog segment other than the newest one expires when its modification time is more
than `fileReservedTime` hours old. Deleting expired segments moves the commitlog's minimum
offset; a consume-queue file whose last entry points below it, and an index file whose
endPhyOffset is below it, are orphaned and go too (never a queue's or the index's newest
file, as in the broker). The plan measures every file it would delete (size, and the bytes
it takes on disk: files are sparse) before a byte changes, so a dry run and the real run
report the same numbers.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from rmqtool.engine import journal
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.opening import Store, open_store
from rmqtool.files.groups import FileGroup, FileSize, group_files
from rmqtool.files.paths import StorePaths, parse_offset_name
from rmqtool.files.segments import list_segments, open_read_only
from rmqtool.report import COMMITLOG, CONSUMEQUEUE, INDEX
from rmqtool.structures import consumequeue, index

MS_PER_HOUR = 3_600_000
STRUCTURES = (COMMITLOG, CONSUMEQUEUE, INDEX)  # the summary shows each, in this order, even when nothing goes


@dataclass
class CleanPlan:
    deleted: list[tuple[str, str]] = field(default_factory=list)
    min_offset: int = 0  # where the commitlog starts after the deletion
    min_offset_before: int = 0
    reserved_hours: float = 0
    sizes: dict[str, FileSize] = field(default_factory=dict)  # of each file to delete, measured when planned

    @property
    def bytes_freed(self) -> int:
        return sum(self.sizes[f].bytes for f, _ in self.deleted)

    @property
    def disk_bytes_freed(self) -> int:
        return sum(self.sizes[f].disk_bytes for f, _ in self.deleted)

    def freed(self) -> dict[str, FileGroup]:
        """Files and bytes per structure (commitlog, consumequeue, index; others after them when any)."""
        out = {s: FileGroup(s, "") for s in STRUCTURES}
        for g in group_files(self.deleted, self.sizes):
            total = out.setdefault(g.structure, FileGroup(g.structure, ""))
            total.files += g.files
            total.bytes += g.bytes
            total.disk_bytes += g.disk_bytes
        return out

    def to_json(self) -> dict:
        return {
            "minOffset": self.min_offset,
            "minOffsetBefore": self.min_offset_before,
            "reservedHours": self.reserved_hours,
            "filesDeleted": len(self.deleted),
            "bytesFreed": self.bytes_freed,
            "diskBytesFreed": self.disk_bytes_freed,
            "freed": {s: {"files": len(g.files), "bytes": g.bytes, "diskBytes": g.disk_bytes}
                      for s, g in self.freed().items()},
            "groups": [g.to_json() for g in group_files(self.deleted, self.sizes)],
            "deletedFiles": [{"file": f, "reason": r, "bytes": self.sizes[f].bytes,
                              "diskBytes": self.sizes[f].disk_bytes} for f, r in self.deleted],
        }


def plan_clean(root: str | os.PathLike | Store, cfg: StoreConfig | None = None, reserved_hours: float | None = None,
               now_ms: int | None = None) -> CleanPlan:
    """What the broker's cleanup would delete from the store at `root` now, nothing changed."""
    store = root if isinstance(root, Store) else open_store(root, cfg)
    store.require_writable("clean")
    paths, cfg = store.paths, store.config
    hours = cfg.fileReservedTime if reserved_hours is None else reserved_hours
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    plan = CleanPlan(reserved_hours=hours)
    segments = list_segments(paths.commitlog)
    kept = list(segments)
    for seg in segments[:-1]:
        mtime = seg.path.stat().st_mtime_ns // 1_000_000
        if now < mtime + hours * MS_PER_HOUR:
            break  # the broker deletes from the oldest and stops at the first file it keeps
        plan.deleted.append((str(seg.path), f"older than fileReservedTime={hours} h"))
        kept.remove(seg)
    plan.min_offset_before = segments[0].start if segments else 0
    plan.min_offset = kept[0].start if kept else 0
    if plan.deleted:
        plan.deleted += orphaned_files(paths, plan.min_offset)
    plan.sizes = {f: FileSize.of(f) for f, _ in plan.deleted}
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
        files = [paths.index / name for name in index.file_names(paths.index)]
        for f in files[:-1]:
            with open_read_only(f) as buf:
                head = index.header_of(buf)
                end = int(head["endPhyOffset"]) if head is not None else 0
            if end >= min_offset:
                break
            out.append((str(f), f"every entry points below the commitlog minimum {min_offset}"))
    return out


def apply_clean(store: Store, plan: CleanPlan) -> None:
    """Delete what `plan` names, under the store's lock."""
    lock = store.files.lock()
    try:
        journal.delete_all(store.paths, [f for f, _ in dict.fromkeys(plan.deleted)])
    finally:
        lock.release()
