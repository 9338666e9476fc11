"""The broker's expired-file deletion (CleanCommitLogService and CleanConsumeQueueService).

The commitlog says which of its segments expire (`Structure.expired`), which moves its minimum
offset; every structure then names its files orphaned below it (`Structure.orphans`). The plan
measures every file it would delete (size, and the bytes it takes on disk: files are sparse)
before a byte changes, so a dry run and the real run report the same numbers.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from rmqtool.engine import journal
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.opening import Store, open_store
from rmqtool.files.groups import FileGroup, FileSize, group_files
from rmqtool.report import COMMITLOG, CONSUMEQUEUE, INDEX
from rmqtool.structures.registry import COMMITLOG as LOG
from rmqtool.structures.registry import REGISTRY

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
    expiry = LOG.expired(paths, now, hours)
    plan = CleanPlan(list(expiry.files), expiry.min_offset, expiry.min_offset_before, hours)
    if plan.deleted:
        for structure in REGISTRY:
            plan.deleted += structure.orphans(paths, plan.min_offset)
    plan.sizes = {f: FileSize.of(f) for f, _ in plan.deleted}
    return plan


def apply_clean(store: Store, plan: CleanPlan) -> None:
    """Delete what `plan` names, under the store's lock."""
    lock = store.files.lock()
    try:
        journal.delete_all(store.paths, [f for f, _ in dict.fromkeys(plan.deleted)])
    finally:
        lock.release()
