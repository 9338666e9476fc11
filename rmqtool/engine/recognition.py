"""Refuse a file that is not the kind of store file a command was given, before reading it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.structures.checkpoint.recognize import checkpoint_refusal
from rmqtool.structures.commitlog.recognize import segment_refusal
from rmqtool.structures.consumequeue.recognize import queue_file_refusal
from rmqtool.structures.index.recognize import index_file_refusal

HEAD_LEN = 64

_CHECKS: dict[str, Callable[[bytes, int], str | None]] = {
    "commitlog segment": lambda head, size: segment_refusal(head),
    "consume-queue file": queue_file_refusal,
    "index file": index_file_refusal,
    "checkpoint": lambda head, size: checkpoint_refusal(head),
}


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
    reason = _CHECKS[kind](head, size)
    if reason is not None:
        raise RmqError(f"{path}: not {_a(kind)} ({reason})")


def require_store_root(path: Path, action: str = "") -> None:
    """Raise a one-line refusal when `path` is a file where a store root is needed."""
    if path.is_file():
        raise RmqError(f"{path}: not a store root (a file; {action or 'this command'} takes the folder that holds "
                       "commitlog/)")


def _a(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind
