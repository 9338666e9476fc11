"""Exclusive ownership of a store root: the `lock` file and the `abort` marker.

The broker takes a POSIX record lock (fcntl) on byte 0 of `lock`, so a running broker and
rmqtool exclude each other. `abort` exists while a writer has the store open; a clean
close removes it last, after everything is flushed.
"""

from __future__ import annotations

import fcntl
import os
import struct
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.files.paths import StorePaths

LOCK_TEXT = b"lock"  # what the broker writes into the lock file
_HELD_HERE: set[str] = set()  # POSIX locks do not exclude a second open in the same process


class StoreLock:
    def __init__(self, paths: StorePaths) -> None:
        """The lock of `paths`; the caller has checked the store is one rmqtool may write."""
        self.paths = paths
        self.key = os.path.realpath(paths.root)
        if self.key in _HELD_HERE:
            raise RmqError(f"store {paths.root} is already open in this process")
        try:
            self.fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise RmqError(f"cannot open {paths.lock}: {e.strerror}") from None
        try:
            fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError:
            os.close(self.fd)
            raise locked(paths) from None
        os.pwrite(self.fd, LOCK_TEXT, 0)
        os.fsync(self.fd)
        _HELD_HERE.add(self.key)

    def release(self) -> None:
        if self.fd < 0:
            return
        fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, 0)
        os.close(self.fd)
        self.fd = -1
        _HELD_HERE.discard(self.key)


_FLOCK = struct.Struct("hhqqi4x")  # struct flock on Linux: type, whence, start, len, pid


def lock_holder(paths: StorePaths) -> int | None:
    """The pid holding the store's lock, None when free; tests the lock without taking it."""
    try:
        fd = os.open(paths.lock, os.O_RDONLY)
    except OSError:
        return None
    try:
        probe = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
        kind, _, _, _, pid = _FLOCK.unpack(fcntl.fcntl(fd, fcntl.F_GETLK, probe))
    except OSError:
        return None
    finally:
        os.close(fd)
    return pid if kind != fcntl.F_UNLCK else None


def locked(paths: StorePaths) -> RmqError:
    """The one refusal of a store another process holds: the holder named when the lock says who it is."""
    holder = lock_holder(paths)
    who = f"process {holder}" if holder else "another process"
    return RmqError(f"store {paths.root} is locked by {who} (a running broker?): nothing changed")


def create_abort(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    os.fsync(fd)
    os.close(fd)
    fsync_path(path.parent)


def remove_abort(path: Path) -> None:
    path.unlink(missing_ok=True)
    fsync_path(path.parent)


def fsync_path(path: Path) -> None:
    """fsync a file or a directory by path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
