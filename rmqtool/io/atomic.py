"""Outputs appear whole or not at all: every file or folder a command writes goes through `atomic_output`.

The output is written under a temporary name beside its target, `.NAME.rmqtool-tmp-<pid>`, and
renamed to the target only at the end, after it is flushed and fsynced (an existing target, with
`force`, stays as it was until then). On an interrupt (SIGINT, or SIGTERM, which the CLI turns
into one), an exception or a full disk the temporary is removed: an interrupt becomes an
`Interrupted` saying what stopped (exit 130, 143 after SIGTERM), a refusal of the system (ENOSPC, EACCES, ...) an
RmqError naming the target (exit 2), and anything else goes on as it was. A SIGKILL leaves the
temporary; the next run that writes the same target removes temporaries of it whose process is
gone.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rmqtool.errors import Interrupted, RmqError
from rmqtool.files.lock import fsync_path
from rmqtool.files.signals import uninterrupted

TEMP_MARK = ".rmqtool-tmp-"


def _prefix(target: Path) -> str:
    """The start of the name of every temporary of `target` (the writer's pid follows)."""
    return f".{target.name}{TEMP_MARK}"


def temporary_name(target: Path) -> Path:
    """Where this process writes the output of `target` until it is whole."""
    return target.with_name(f"{_prefix(target)}{os.getpid()}")


@contextmanager
def atomic_output(path: str | os.PathLike, force: bool = False, what: str = "write",
                  exists_hint: str = "pass --force to overwrite it") -> Iterator[Path]:
    """The temporary path (not yet created) to write `path`'s file or folder to; renamed to `path` on success.

    An existing `path` is refused (with `exists_hint`) unless `force`; `what` names the command in
    the error an interrupt or a full disk becomes.
    """
    target = Path(path)
    if not force and os.path.lexists(target):
        raise RmqError(f"{target} exists: {exists_hint}")
    if target.is_dir() and not target.is_symlink():
        raise RmqError(f"{target} is a folder: name a file to write")
    if not target.parent.is_dir():
        raise RmqError(f"cannot write {target}: no folder {target.parent}")
    _remove_stale(target)
    tmp = temporary_name(target)
    try:
        yield tmp
    except BaseException as e:
        with uninterrupted():
            _remove(tmp)
        _report(e, target, what)
        raise
    with uninterrupted():  # the commit runs to its end
        try:
            if not force and os.path.lexists(target):
                raise RmqError(f"{target} exists: {exists_hint}")
            _sync(tmp)
            os.replace(tmp, target)
        except BaseException as e:
            _remove(tmp)
            _report(e, target, what)
            raise
        fsync_path(target.parent)


def _report(e: BaseException, target: Path, what: str) -> None:
    """An interrupt or a refusal of the system as the error that says `what` stopped and wrote nothing."""
    if isinstance(e, KeyboardInterrupt):
        raise Interrupted(f"{what} stopped; nothing was written to {target}") from None
    if isinstance(e, OSError):
        reason = os.strerror(e.errno) if e.errno else str(e)
        raise RmqError(f"{what} stopped: {reason}; nothing was written to {target}") from None


def _remove_stale(target: Path) -> None:
    """Remove temporaries of `target` left by runs that are gone (killed), and any of this process."""
    prefix = _prefix(target)
    try:
        names = [n for n in os.listdir(target.parent) if n.startswith(prefix)]
    except OSError:
        return  # a missing folder is the writer's error to report
    for name in names:
        pid = name[len(prefix):]
        if pid.isdigit() and (int(pid) == os.getpid() or not _alive(int(pid))):
            _remove(target.parent / name)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _sync(path: Path) -> None:
    """fsync the file, or every file and folder of the folder, at `path`."""
    if not path.is_dir():
        fsync_path(path)
        return
    for folder, _, files in os.walk(path):
        for name in files:
            fsync_path(Path(folder, name))
        fsync_path(Path(folder))
