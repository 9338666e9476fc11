"""One way to open a store: where its files are, what kind it is, and its geometry, resolved once.

Geometry comes from the files (the segment size from the segments' names, the queue file size
from the queues' first files, the index geometry from the index files' size), checked against
the broker.conf when one was given: a contradiction is refused naming both values. The config's
values (the broker's defaults when none was given) are used only where no file says otherwise,
as for a new store. Every command, reader or writer, gets the one `Store` this returns.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from rmqtool.engine import kind as store_kind
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.storefiles import StoreFiles
from rmqtool.errors import RmqError
from rmqtool.files.paths import DLEDGER_PREFIX, StorePaths
from rmqtool.files.segments import SegmentFile, list_segments
from rmqtool.structures.commitlog.geometry import segment_size_of
from rmqtool.structures.consumequeue.geometry import file_size_of, first_file_sizes
from rmqtool.structures.dledger import DATA_DIR
from rmqtool.structures.index.geometry import store_geometry

if TYPE_CHECKING:
    from rmqtool.engine.kind import StoreKind


class Store:
    """A store root resolved once: paths, the config whose geometry is the files', and its kind, told
    from its files on first use (a lookup by offset never needs it) and then kept."""

    def __init__(self, paths: StorePaths, config: StoreConfig, segments: tuple[SegmentFile, ...],
                 kind: StoreKind | None = None) -> None:
        self.paths, self.config, self.segments = paths, config, segments
        self.files = StoreFiles(paths)  # lock, abort and the journals a killed writer leaves
        self._kind = kind

    @property
    def kind(self) -> StoreKind:
        if self._kind is None:
            self._kind = store_kind.detect(self.paths)
        return self._kind

    @property
    def root(self) -> Path:
        return self.paths.root

    @property
    def dledger(self) -> bool:
        """Whether the log is a DLedger data log (records wrapped in entries)."""
        log = self.paths.commitlog
        return log.name == DATA_DIR and log.parent.name.startswith(DLEDGER_PREFIX)

    def require_writable(self, action: str) -> None:
        """Refuse, before anything is touched, to `action` a store that is not a plain 4.x store."""
        if not self.kind.writable:
            raise RmqError(f"{self.root} is a {self.kind.label} ({self.kind.evidence[0]}); rmqtool writes only 4.x "
                           f"stores and will not {action} it: nothing was changed")


def load_config(config: str | os.PathLike | StoreConfig | None) -> StoreConfig:
    """A broker.conf read (or a config given as an object, checked), or the broker's defaults."""
    if isinstance(config, StoreConfig):
        config.validate()
        return config
    return StoreConfig.from_file(config)[0] if config else StoreConfig()


def open_store(path: str | os.PathLike, config: str | os.PathLike | StoreConfig | None = None, *,
               kind: StoreKind | None = None) -> Store:
    """The store at `path` with its kind and geometry resolved (nothing is created or changed). `kind`
    is the kind this command found already: resolving a store again does not detect it again."""
    cfg = load_config(config)
    root = Path(path)
    paths = StorePaths(root, cfg.storePathCommitLog or _dledger_data(root))
    segments = tuple(list_segments(paths.commitlog))
    resolved = resolve_geometry(paths, cfg, segments, dledger=paths.commitlog.name == DATA_DIR)
    return Store(paths, resolved, segments, kind)


def open_existing(path: str | os.PathLike, config: str | os.PathLike | StoreConfig | None, action: str) -> Store:
    """An existing store rmqtool may `action`: another kind is refused by name, a folder without a log as such."""
    store = open_store(path, config)
    store.require_writable(action)
    if not store.paths.is_store():
        raise not_a_store(store.root)
    return store


def not_a_store(root: Path) -> RmqError:
    """The refusal of a root that holds no log: a path that is not there is named as such."""
    if not root.exists():
        return RmqError(f"{root}: no such file or directory")
    return RmqError(f"{root} is not a store (no commitlog/ folder)")


def _dledger_data(root: Path) -> Path | None:
    """`dledger-<id>/data` under the root: the commitlog of a DLedger store."""
    found = sorted(root.glob(f"{DLEDGER_PREFIX}*/{DATA_DIR}"))
    return found[0] if found and found[0].is_dir() else None


def resolve_geometry(paths: StorePaths, cfg: StoreConfig, segments: tuple[SegmentFile, ...], *,
                     dledger: bool = False) -> StoreConfig:
    """`cfg` with the segment, queue-file and index sizes the files show; a given value they contradict
    is refused, naming both."""
    given = cfg.given
    changes: dict[str, int] = {}
    size, confirmed = segment_size_of(segments)
    if size is not None:
        if "mappedFileSizeCommitLog" not in given:
            changes["mappedFileSizeCommitLog"] = size
        elif confirmed and not dledger and size != cfg.mappedFileSizeCommitLog:
            _contradiction(f"mappedFileSizeCommitLog={cfg.mappedFileSizeCommitLog}", "commitlog segments", [size])
    queue_sizes = first_file_sizes(paths.consumequeue)
    queue_size = file_size_of(queue_sizes)
    if queue_sizes and "mappedFileSizeConsumeQueue" in given:
        if cfg.mappedFileSizeConsumeQueue not in queue_sizes:
            _contradiction(f"mappedFileSizeConsumeQueue={cfg.mappedFileSizeConsumeQueue}", "consume-queue files",
                           queue_sizes)
    elif queue_size is not None:
        changes["mappedFileSizeConsumeQueue"] = queue_size
    geometry = store_geometry(paths.index, cfg.maxHashSlotNum, cfg.maxIndexNum, given)
    if geometry is not None:
        changes["maxHashSlotNum"], changes["maxIndexNum"] = geometry
    return dataclasses.replace(cfg, **changes) if changes else cfg


def _contradiction(setting: str, files: str, sizes: list[int]) -> None:
    shown = ", ".join(str(s) for s in sorted(set(sizes))[:3])
    raise RmqError(f"the config says {setting}, but the {files} are {shown} bytes: "
                   "pass the broker.conf the store was written with")
