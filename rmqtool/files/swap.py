"""Folders of a store replaced by staged ones in one journaled step, the old ones kept under lost/.

A rebuild stages its folders (`consumequeue/`, `index/`) in `<root>/.rebuild/<id>/`, on the store's
own file system. The swap writes the journal `<root>/.rebuild/SWAPPING` (the staging folder, the
parts, the lost/ folder) and makes it durable before the first rename; then, part by part, the
store's folder is renamed into lost/ and the staged one into its place.

A process killed before the journal exists leaves the store as it was (the staging folder is
discarded by the next rebuild). Killed after it, the journal stays, and the next process that
opens the store for writing (`finish_swap`: every writer, `recover` and `rebuild`) does the
renames that are left. Each rename is one step that is either on disk or not, so finishing
always ends with every new folder in place and every old one in lost/.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from rmqtool.files.lock import fsync_path
from rmqtool.files.paths import StorePaths

STAGING_DIR = ".rebuild"
JOURNAL = "SWAPPING"


def staging_root(paths: StorePaths) -> Path:
    return paths.root / STAGING_DIR


def swap_in(paths: StorePaths, staging: Path, parts: list[str], lost: Path) -> None:
    """Replace each folder of `parts` with the one staged in `staging`; the old ones move to `lost`."""
    journal = staging_root(paths) / JOURNAL
    tmp = journal.with_name(JOURNAL + ".tmp")
    doc = {"staging": staging.name, "parts": parts, "lost": str(lost.relative_to(paths.root))}
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    fsync_path(tmp)
    os.replace(tmp, journal)
    fsync_path(journal.parent)
    _finish(paths, doc)


def finish_swap(paths: StorePaths) -> bool:
    """Finish a swap a killed process left half done; returns whether there was one."""
    journal = staging_root(paths) / JOURNAL
    if not journal.is_file():
        return False
    _finish(paths, json.loads(journal.read_text(encoding="utf-8")))
    return True


def discard_staging(paths: StorePaths) -> None:
    """Remove staging folders no journal names (a rebuild that stopped before its swap)."""
    root = staging_root(paths)
    if root.is_dir() and not (root / JOURNAL).exists():
        shutil.rmtree(root, ignore_errors=True)


def _rename(src: Path, dst: Path) -> None:
    """One step of a swap (a test stops a swap between two of them)."""
    os.rename(src, dst)


def _finish(paths: StorePaths, doc: dict) -> None:
    staging = staging_root(paths) / doc["staging"]
    lost = paths.root / doc["lost"]
    for part in doc["parts"]:
        staged, live = staging / part, paths.root / part
        if not staged.exists():
            continue  # this part was swapped already
        if live.exists():
            lost.mkdir(parents=True, exist_ok=True)
            _rename(live, lost / part)
            fsync_path(lost)
        _rename(staged, live)
        fsync_path(paths.root)
    (staging_root(paths) / JOURNAL).unlink()
    shutil.rmtree(staging_root(paths), ignore_errors=True)
    fsync_path(paths.root)
