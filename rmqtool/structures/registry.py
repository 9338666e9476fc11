"""The registry: every structure's object, in the order a store is checked (the log first, what points
into it after); `verify`, `recover`, `doctor` and `info` loop over it. A new structure is one folder
and one line here. The objects import what a method needs inside it, so the registry loads nothing heavy.
"""

from __future__ import annotations

from pathlib import Path

from rmqtool.structures.checkpoint.structure import CHECKPOINT
from rmqtool.structures.commitlog.structure import CommitLog
from rmqtool.structures.config.structure import CONFIG
from rmqtool.structures.consumequeue.structure import CONSUME_QUEUES
from rmqtool.structures.dledger.structure import DLEDGER
from rmqtool.structures.epoch.structure import EPOCH
from rmqtool.structures.ha.structure import HA
from rmqtool.structures.index.structure import INDEX
from rmqtool.structures.structure import Structure
from rmqtool.structures.timerlog.structure import TIMERLOG

COMMITLOG = CommitLog(variants=(DLEDGER,))  # a DLedger data file is a segment too
REGISTRY: tuple[Structure, ...] = (COMMITLOG, CONSUME_QUEUES, INDEX, CHECKPOINT, EPOCH, DLEDGER, TIMERLOG, CONFIG, HA)
FILE_OWNERS: tuple[Structure, ...] = tuple(s for s in REGISTRY if s.file_kind)  # whose single files verify reads


def structure(name: str) -> Structure:
    """The registered structure called `name`."""
    return next(s for s in REGISTRY if s.name == name)


def file_owner(kind: str) -> Structure:
    """The structure whose single files are of `kind` ("commitlog segment", "index file" ...)."""
    return next(s for s in FILE_OWNERS if s.file_kind == kind)


def place_in_store(path: Path) -> tuple[Structure, Path] | None:
    """(the structure that keeps `path`, its store root) when the file's place in a store says:
    commitlog/<offset>, consumequeue/<topic>/<queueId>/<offset>, index/<time>, checkpoint; None elsewhere.
    The queue's place is asked first: a topic may be named like another structure's folder."""
    for owner in (CONSUME_QUEUES, COMMITLOG, INDEX, CHECKPOINT):
        root = owner.place(path)
        if root is not None:
            return owner, root
    return None
