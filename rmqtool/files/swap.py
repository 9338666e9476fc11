"""Files and folders of a store replaced by staged ones in one journaled step, the old ones kept under lost/.

A change to a store (`rebuild`, `doctor --apply`) stages every new file or folder in
`<root>/.rebuild/<id>/`, on the store's own file system (a commitlog kept elsewhere stages its
segments beside it, `<commitlog>.staged/`). The swap writes the journal `<root>/.rebuild/SWAPPING`
(the staging folder, each part as a pair: the live path and the staged one that replaces it, or none
when the live one only goes, and the lost/ folder) and makes it durable before the first rename. That
durable journal is the commit point (Kafka's `.cleaned` -> `.swap` -> rename). Then, part by part, the
live path is renamed into lost/ and the staged one into its place; `abort`, when the journal says so,
goes last (the store is whole again).

A process killed before the journal exists leaves the store as it was (staging is discarded by the next
writer). Killed after it, the journal stays, and the next process that opens the store for writing
(`finish_swap`: every writer, `recover`, `rebuild`, `doctor --apply`) does the renames that are left.
Each rename is one step that is either on disk or not, so finishing always ends with every new part in
place and every old one in lost/.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from rmqtool.files.lock import fsync_path
from rmqtool.files.lost import LOST_DIR, PLAN_FILE, next_lost_dir, write_staged
from rmqtool.files.paths import StorePaths

STAGING_DIR = ".rebuild"
JOURNAL = "SWAPPING"
STAGED_LOG_SUFFIX = ".staged"  # a commitlog kept outside the root stages its segments in `<commitlog>.staged/`


@dataclass(frozen=True)
class Part:
    """One path of the store and what replaces it (None: it only goes to lost/)."""

    live: Path
    staged: Path | None


def staging_root(paths: StorePaths) -> Path:
    return paths.root / STAGING_DIR


def staged_commitlog(paths: StorePaths, staging: Path) -> Path:
    """Where a staged store image keeps its commitlog: on the file system of the store's own commitlog."""
    if paths.commitlog == paths.root / paths.commitlog.name:
        return staging / paths.commitlog.name
    return paths.commitlog.with_name(paths.commitlog.name + STAGED_LOG_SUFFIX)


def swap_in(paths: StorePaths, staging: Path, parts: list[str], plan: dict) -> Path:
    """Replace each folder of `parts` (names under the root) with the one staged in `staging`; the old ones
    go to a new lost/ folder holding `plan`, which appears in the same journaled step. Returns that folder."""
    lost = next_lost_dir(paths)
    write_staged(staging / LOST_DIR, {PLAN_FILE: json.dumps(plan, ensure_ascii=False, indent=2).encode() + b"\n"})
    commit(paths, staging, [Part(lost, staging / LOST_DIR), *(Part(paths.root / p, staging / p) for p in parts)],
           lost)
    return lost


def commit(paths: StorePaths, staging: Path, parts: list[Part], lost: Path, *, clear_abort: bool = False,
           hook=None) -> None:
    """Write the journal durably (the commit point), then swap every part; `clear_abort` removes `abort` last.
    `hook(step)` is called at each step boundary (a test stops the swap there)."""
    journal = staging_root(paths) / JOURNAL
    tmp = journal.with_name(JOURNAL + ".tmp")
    doc = {"staging": staging.name, "lost": _rel(paths, lost), "clearAbort": clear_abort,
           "parts": [[_rel(paths, p.live), None if p.staged is None else _rel(paths, p.staged)] for p in parts]}
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    fsync_path(tmp)
    os.replace(tmp, journal)
    fsync_path(journal.parent)
    if hook is not None:
        hook("committed")
    _finish(paths, doc, hook)


def pending_swap(paths: StorePaths) -> dict | None:
    """The journal of a swap a killed process left half done, or None."""
    journal = staging_root(paths) / JOURNAL
    return json.loads(journal.read_text(encoding="utf-8")) if journal.is_file() else None


def finish_swap(paths: StorePaths) -> bool:
    """Finish a swap a killed process left half done; returns whether there was one."""
    doc = pending_swap(paths)
    if doc is None:
        return False
    _finish(paths, doc, None)
    return True


def discard_staging(paths: StorePaths) -> None:
    """Remove staging no journal names (a change that stopped before its commit point)."""
    root = staging_root(paths)
    if root.is_dir() and not (root / JOURNAL).exists():
        shutil.rmtree(root, ignore_errors=True)
    outside = staged_commitlog(paths, root / "x")
    if outside.parent != root / "x" and outside.is_dir() and not (root / JOURNAL).exists():
        shutil.rmtree(outside, ignore_errors=True)


def _rel(paths: StorePaths, path: Path) -> str:
    """`path` relative to the root when it lies under it (the journal survives a moved store), else absolute."""
    try:
        return str(Path(path).relative_to(paths.root))
    except ValueError:
        return str(Path(os.path.abspath(path)))


def _rename(src: Path, dst: Path) -> None:
    """One step of a swap (a test stops a swap between two of them)."""
    try:
        os.rename(src, dst)
    except OSError as e:
        if e.errno != errno.EXDEV or src.is_dir():
            raise
        tmp = dst.with_name(dst.name + ".part")  # a commitlog on another file system: copy whole, then remove
        shutil.copyfile(src, tmp)
        fsync_path(tmp)
        os.replace(tmp, dst)
        src.unlink()


def _finish(paths: StorePaths, doc: dict, hook) -> None:
    lost = paths.root / doc["lost"]
    for part in doc["parts"]:
        # a journal of an earlier release names folders under the root, staged under the same name
        live_name, staged_name = (part, f"{STAGING_DIR}/{doc['staging']}/{part}") if isinstance(part, str) else part
        live = paths.root / live_name
        staged = None if staged_name is None else paths.root / staged_name
        if staged is not None and not os.path.lexists(staged):
            continue  # this part was swapped already
        if os.path.lexists(live):
            kept = lost / _kept_name(paths, live)
            kept.parent.mkdir(parents=True, exist_ok=True)
            _rename(live, kept)
            fsync_path(kept.parent)
            fsync_path(live.parent)
        if staged is not None:
            live.parent.mkdir(parents=True, exist_ok=True)
            _rename(staged, live)
            fsync_path(live.parent)
        if hook is not None:
            hook(f"swapped {live_name}")
    if doc.get("clearAbort"):
        paths.abort.unlink(missing_ok=True)
    (staging_root(paths) / JOURNAL).unlink()
    fsync_path(staging_root(paths))
    shutil.rmtree(staging_root(paths), ignore_errors=True)
    outside = staged_commitlog(paths, staging_root(paths) / "x")
    if outside.parent != staging_root(paths) / "x":
        shutil.rmtree(outside, ignore_errors=True)
    fsync_path(paths.root)


def _kept_name(paths: StorePaths, live: Path) -> Path:
    """Where a replaced path is kept inside the lost/ folder: its path relative to the root (a commitlog kept
    elsewhere counts as commitlog/)."""
    for base, under in ((paths.root, Path()), (paths.commitlog, Path("commitlog"))):
        try:
            return under / Path(os.path.abspath(live)).relative_to(os.path.abspath(base))
        except ValueError:
            continue
    return Path(live.name)


def link_tree(src: Path, dst: Path) -> None:
    """`dst` made a tree of hard links to every file under `src` (a staged image's unchanged folder)."""
    for folder, _dirs, files in os.walk(src):
        here = dst / Path(folder).relative_to(src)
        here.mkdir(parents=True, exist_ok=True)
        for name in files:
            os.link(Path(folder) / name, here / name)
