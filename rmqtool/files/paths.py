"""Where files live under a store root, and how they are named."""

from __future__ import annotations

import os
from pathlib import Path

COMMITLOG_DIR = "commitlog"
CONSUMEQUEUE_DIR = "consumequeue"
INDEX_DIR = "index"
CHECKPOINT_FILE = "checkpoint"
ABORT_FILE = "abort"
LOCK_FILE = "lock"
CONFIG_DIR = "config"
DLEDGER_PREFIX = "dledger-"  # dledger-<selfId>/data and /index: a DLedger commitlog
OFFSET_NAME_DIGITS = 20


TEMP_PREFIX, TEMP_SUFFIX = ".", ".tmp"  # a file being allocated, renamed into place when whole


def temporary_name(name: str) -> str:
    return f"{TEMP_PREFIX}{name}{TEMP_SUFFIX}"


def is_temporary(name: str) -> bool:
    return name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX)


def offset_name(offset: int) -> str:
    """A segment's file name: its start offset, zero-padded to 20 digits."""
    return f"{offset:0{OFFSET_NAME_DIGITS}d}"


def parse_offset_name(name: str) -> int | None:
    return int(name) if len(name) == OFFSET_NAME_DIGITS and name.isdigit() else None


class StorePaths:
    """The files of one store root."""

    def __init__(self, root: str | os.PathLike, commitlog: str | os.PathLike | None = None) -> None:
        self.root = Path(root)
        self.commitlog = Path(commitlog) if commitlog else self.root / COMMITLOG_DIR
        self.consumequeue = self.root / CONSUMEQUEUE_DIR
        self.index = self.root / INDEX_DIR
        self.checkpoint = self.root / CHECKPOINT_FILE
        self.abort = self.root / ABORT_FILE
        self.lock = self.root / LOCK_FILE

    def queue_dir(self, topic: str, queue_id: int) -> Path:
        return self.consumequeue / topic / str(queue_id)

    def is_store(self) -> bool:
        return self.commitlog.is_dir()
