"""Refuse a file that is not the kind of store file a command was given, before reading it."""

from __future__ import annotations

from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.structures.registry import file_owner

HEAD_LEN = 64

def _refusal(kind: str, head: bytes, size: int) -> str | None:
    """The owning structure's own check, imported when a file of that kind is given."""
    return file_owner(kind).recognise(head, size)


def require_file(path: Path, kind: str) -> None:
    """Raise a one-line refusal unless `path` is a regular file whose first bytes could be a `kind`."""
    if not path.is_file():
        raise RmqError(f"{path}: not {_a(kind)} (no such file)")
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_LEN)
            size = f.seek(0, 2)
    except OSError as e:
        raise RmqError(f"{path}: cannot read: {e.strerror}") from None
    reason = _refusal(kind, head, size)
    if reason is not None:
        raise RmqError(f"{path}: not {_a(kind)} ({reason})")


def require_store_root(path: Path, action: str = "") -> None:
    """Raise a one-line refusal when `path` is a file where a store root is needed."""
    if path.is_file():
        raise RmqError(f"{path}: not a store root (a file; {action or 'this command'} takes the folder that holds "
                       "commitlog/)")


def _a(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind
