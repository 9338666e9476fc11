"""`<store>/lost/`: what a repair cut or removed, kept so an operator can always go back (LevelDB's repair
keeps its lost/ the same way).

One repair fills one folder `lost/<UTC time, yyyymmddTHHMMSSZ>/`: a removed file whole under its path
relative to the store root (`index/20231114221320000`), a cut byte range as that path plus `@` and the
offset of the range's first byte in the file (`commitlog/00000000000000131072@19538` holds bytes
19538.. of that segment), and `plan.json`, the plan that cut them. Every range is copied and fsynced
before it is cut; a removed file is moved there (renamed: the move is the removal). Writing each kept
range back at its offset, and each kept file back at its path, gives the files as they were.

Nothing reads lost/ as part of the store: segments, queues and index files are listed only in
commitlog/, consumequeue/ and index/.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

from rmqtool.files.lock import fsync_path
from rmqtool.files.paths import COMMITLOG_DIR, StorePaths

LOST_DIR = "lost"
PLAN_FILE = "plan.json"
RANGE_SEP = "@"  # <relative path>@<offset>: a range cut from that file at that offset
STAMP = "%Y%m%dT%H%M%SZ"
_COPY_WINDOW = 8 << 20  # a range is copied a window at a time: memory stays bounded


def next_lost_dir(paths: StorePaths, when: datetime | None = None) -> Path:
    """The folder a repair starting at `when` (now) fills: lost/<UTC time>/, with -2, -3 .. when taken."""
    base = paths.root / LOST_DIR / (when or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime(STAMP)
    found, n = base, 1
    while found.exists():
        n += 1
        found = base.with_name(f"{base.name}-{n}")
    return found


def write_staged(folder: Path, files: dict[str, bytes]) -> None:
    """A lost/ folder staged whole (its plan, its ledger ...), each file durable: a swap journal then moves it
    into lost/ in the same step as the files it keeps, so no lost/ folder exists for a change that did not
    happen."""
    folder.mkdir()
    for name, data in files.items():
        with open(folder / name, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    fsync_path(folder)


def range_name(relative: Path, start: int) -> Path:
    """Where bytes cut from `relative` at `start` are kept, within a lost/ folder."""
    return relative.with_name(f"{relative.name}{RANGE_SEP}{start}")


class Lost:
    """One repair's lost/ folder: created with its plan.json, then filled range by range, file by file."""

    def __init__(self, paths: StorePaths, plan: dict, when: datetime | None = None) -> None:
        self.paths = paths
        while True:
            self.directory = next_lost_dir(paths, when)
            _make_dirs(self.directory.parent)
            try:
                self.directory.mkdir()
                break
            except FileExistsError:  # another repair took the name meanwhile
                continue
        fsync_path(self.directory.parent)
        self._write(self.directory / PLAN_FILE, json.dumps(plan, ensure_ascii=False, indent=2).encode() + b"\n")

    def relative(self, file: str | os.PathLike) -> Path:
        """`file`'s path relative to the store root; a commitlog kept elsewhere (storePathCommitLog) counts
        as commitlog/."""
        path = Path(os.path.abspath(file))
        for base, under in ((self.paths.root, Path()), (self.paths.commitlog, Path(COMMITLOG_DIR))):
            try:
                return under / path.relative_to(os.path.abspath(base))
            except ValueError:
                continue
        raise ValueError(f"{file} is not a file of the store at {self.paths.root}")

    def keep_range(self, file: str | os.PathLike, start: int, end: int) -> Path:
        """Copy bytes [start, end) of `file` to lost/, durably, before they are cut; returns the copy."""
        dst = self.directory / range_name(self.relative(file), start)
        _make_dirs(dst.parent)
        with open(file, "rb") as src, open(dst, "xb") as out:
            pos = start
            while pos < end:
                chunk = os.pread(src.fileno(), min(_COPY_WINDOW, end - pos), pos)
                if not chunk:
                    raise OSError(errno.EIO, f"{file} ends at {pos}, before {end}: nothing was cut")
                out.write(chunk)
                pos += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        fsync_path(dst.parent)
        return dst

    def keep_file(self, file: str | os.PathLike) -> Path:
        """Move `file` to lost/ (the move removes it from the store); returns where it went."""
        src = Path(file)
        dst = self.directory / self.relative(src)
        _make_dirs(dst.parent)
        try:
            os.rename(src, dst)
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise
            shutil.copyfile(src, dst)  # a commitlog on another file system: copy, make durable, then remove
            fsync_path(dst)
            src.unlink()
        fsync_path(dst.parent)
        fsync_path(src.parent)
        return dst

    def _write(self, path: Path, data: bytes) -> None:
        with open(path, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        fsync_path(path.parent)


def _make_dirs(directory: Path) -> None:
    """mkdir -p, each new folder made durable in its parent."""
    if directory.is_dir():
        return
    _make_dirs(directory.parent)
    try:
        directory.mkdir()
    except FileExistsError:
        return
    fsync_path(directory.parent)
