"""The service that fills a store's hash index files, as the broker's IndexService does.

Keys go into the newest file (`structures.index.file.IndexFile`) until it is full (indexCount =
maxIndexNum); the next file is named by its creation time and starts where the previous one ended. A
message at an offset below the newest file's endPhyOffset was indexed already and is skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rmqtool.engine.config import StoreConfig
from rmqtool.errors import RmqError
from rmqtool.structures import index
from rmqtool.structures.index.file import IndexFile


class IndexService:
    def __init__(self, directory: Path, cfg: StoreConfig, clock: Callable[[], int] | None = None) -> None:
        self.directory = Path(directory)
        self.clock = clock or (lambda: time.time_ns() // 1_000_000)  # names new files
        self.hash_slots, self.index_num = cfg.maxHashSlotNum, cfg.maxIndexNum
        self.preallocate = cfg.warmMapedFileEnable
        self.file_len = index.file_len(self.hash_slots, self.index_num)
        self.files: list[IndexFile] = []
        self.last_full_end_timestamp = 0  # the checkpoint's indexMsgTimestamp: set when a full file is left
        names = index.file_names(self.directory)
        self.files = [IndexFile(self.directory / name, self.file_len, self.hash_slots, self.index_num)
                      for name in names]
        try:
            if self.files:
                self.files[-1].mf  # noqa: B018 - the newest file is mapped now: a wrong geometry fails here
        except RmqError as e:
            self.close()
            raise RmqError(f"{e} (index files need maxHashSlotNum/maxIndexNum as written: pass --config)") from None

    def _roll(self) -> IndexFile:
        prev = self.files[-1] if self.files else None
        end_phy = end_ts = 0
        if prev is not None:
            hdr = prev.header
            end_phy, end_ts = int(hdr["endPhyOffset"]), int(hdr["endTimestamp"])
            if prev.full:
                self.last_full_end_timestamp = end_ts
        stamp = self.clock()
        name = index.file_name(stamp)
        while (prev is not None and name <= prev.name) or (self.directory / name).exists():
            stamp += 1
            name = index.file_name(stamp)
        f = IndexFile.create(self.directory / name, self.hash_slots, self.index_num, end_phy, end_ts,
                             preallocate=self.preallocate)
        if prev is not None:
            prev.retire()
        self.files.append(f)
        return f

    def put(self, hashes: np.ndarray, phys: np.ndarray, times: np.ndarray) -> None:
        """Index keys (Java key hash, record offset, storeTimestamp) in order."""
        if len(hashes) == 0:
            return
        if self.files:
            seen = phys < int(self.files[-1].header["endPhyOffset"])
            if seen.any():
                hashes, phys, times = hashes[~seen], phys[~seen], times[~seen]
        i = 0
        while i < len(hashes):
            f = self.files[-1] if self.files and not self.files[-1].full else self._roll()
            i = f.put(hashes, phys, times, i)
            f.release_entries()

    def flush(self) -> None:
        for f in self.files[-1:]:  # the others were flushed when they were retired
            f.mf.wrote = f.mf.size
            f.mf.flush()

    def close(self) -> None:
        for f in self.files:
            f.retire()
