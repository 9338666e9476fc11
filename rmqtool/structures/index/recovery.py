"""What recovery does to the index: which files it drops, what the re-dispatch puts back and from where.

A key cannot be taken out of a hash chain, so a file is kept whole or dropped whole, and the re-dispatch
puts the keys of its records back. After a crash, files newer than the checkpoint's index time go (the
broker's IndexService.load with lastExitOK false); a truncation drops the files holding keys of records
at or past the new end; --thorough rebuilds the whole index when verify found an error in it.

`view` is the store being read: `index_paths()` and `index_files()`. `plan` is recovery's plan, taken by
what it offers: `end` (where the log ends after recovery), `deleted` ((file, reason) pairs),
`index_dropped` (paths), `index_entries_dropped`, `index_keys_before` and `index_from` (where the
re-dispatch re-builds dropped files from; None: no such start).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmqtool.structures import index

NEWER = "index file newer than the checkpoint's index time"
PAST_END = "index file holding keys of records past the new end"
REBUILT = "rebuilt from the commitlog (keys missing or unreachable)"


def kept(view: Any, plan: Any) -> list[Path]:
    """The index files the plan keeps, oldest first."""
    dropped = set(plan.index_dropped)
    return [p for p in view.index_paths() if str(p) not in dropped]


def _drop(view: Any, plan: Any, path: Path, reason: str) -> None:
    plan.index_dropped.append(str(path))
    plan.index_entries_dropped += view.index_files().held(path)
    plan.deleted.append((str(path), reason))


def plan_newer(view: Any, index_timestamp: int, plan: Any) -> None:
    """After a crash: files whose endTimestamp is past the checkpoint's index time go."""
    for path in view.index_paths():
        head = index.read_header(path)
        end_ts = int(head["endTimestamp"]) if head is not None else 0
        if end_ts > index_timestamp:
            _drop(view, plan, path, NEWER)


def plan_past(view: Any, plan: Any) -> None:
    """Truncation: files holding keys of records at or past the new end go whole, and the re-dispatch puts
    back the keys of their records before the end (from the first one's beginPhyOffset)."""
    dropped = set(plan.index_dropped)
    for path in view.index_paths():
        head = index.read_header(path)
        if head is None or int(head["endPhyOffset"]) < plan.end or str(path) in dropped:
            continue
        _drop(view, plan, path, PAST_END)
        begin = int(head["beginPhyOffset"])
        plan.index_from = begin if plan.index_from is None else min(plan.index_from, begin)


def plan_rebuild(view: Any, plan: Any) -> None:
    """--thorough, when verify found an error in the index: every kept file goes, and the re-dispatch
    rebuilds them all."""
    for path in kept(view, plan):
        _drop(view, plan, path, REBUILT)
    plan.index_keys_before = 0


def keys_kept(view: Any, plan: Any) -> int:
    """The entries of the files the plan keeps."""
    files = view.index_files()
    return sum(files.held(p) for p in kept(view, plan))


def kept_end(view: Any, plan: Any) -> int:
    """Where the kept files' keys end (the newest kept file's endPhyOffset): the re-dispatch indexes the
    records from there; 0 when none is kept."""
    files = kept(view, plan)
    head = index.read_header(files[-1]) if files else None
    return int(head["endPhyOffset"]) if head is not None else 0
