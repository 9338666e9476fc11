"""The checkpoint file: the newest storeTimestamp durable in the commitlog, the consume queues
and the index (the broker's StoreCheckpoint). Recovery after a crash starts from them."""

from __future__ import annotations

import os
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.files.lock import fsync_path
from rmqtool.structures import checkpoint


class CheckpointFile:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        exists = self.path.exists()
        cp = checkpoint.decode_checked(self.path.read_bytes(), self.path) if exists else checkpoint.Checkpoint()
        self.physic, self.logics, self.index = cp.physicMsgTimestamp, cp.logicsMsgTimestamp, cp.indexMsgTimestamp

    def flush(self) -> None:
        """Write the page and make it durable."""
        page = checkpoint.encode(checkpoint.Checkpoint(self.physic, self.logics, self.index))
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, page, 0)
            os.fdatasync(fd)
        finally:
            os.close(fd)


def lower_to(path: Path, ceiling: int, keep_in: Path | None) -> None:
    """Truncation: no flush time may name data past the new end (the index time of a dropped index file
    would keep a later crash recovery from rebuilding its successor), so each is lowered to `ceiling`, the
    last kept record's store time; the old page is kept first in `keep_in` (lost/), when given. A missing
    page is written with every time at `ceiling` (the recovery that truncates makes everything up to the
    last kept record durable before it closes the store): zero times would send a crash recovery back to
    the log's first segment and drop every index file."""
    if not path.is_file():
        if ceiling > 0:
            cp = CheckpointFile(path)
            cp.physic = cp.logics = cp.index = ceiling
            cp.flush()
            fsync_path(path.parent)
        return
    if keep_in is not None:
        (keep_in / path.name).write_bytes(path.read_bytes())
        fsync_path(keep_in / path.name)
    cp = CheckpointFile(path)
    cp.physic, cp.logics, cp.index = min(cp.physic, ceiling), min(cp.logics, ceiling), min(cp.index, ceiling)
    cp.flush()


def reset_to(path: Path, newest: int) -> None:
    """The checkpoint of a store whose newest record was stored at `newest`: each time lowered to it, or all
    three set to it when the file is missing or does not decode (a repair writes it into its staged copy)."""
    try:
        cp = CheckpointFile(path)
        fresh = not path.exists()
    except RmqError:
        path.unlink()
        cp, fresh = CheckpointFile(path), True
    if fresh:
        cp.physic = cp.logics = cp.index = newest
    else:
        cp.physic, cp.logics, cp.index = min(cp.physic, newest), min(cp.logics, newest), min(cp.index, newest)
    cp.flush()
