"""Hash index files and the service that fills them, as the broker's IndexService does.

Keys go into the newest file until it is full (indexCount = maxIndexNum); the next file is
named by its creation time and starts where the previous one ended. A message at an offset
below the newest file's endPhyOffset was indexed already and is skipped.
"""

from __future__ import annotations

import mmap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rmqtool.engine.config import StoreConfig
from rmqtool.errors import RmqError
from rmqtool.files.mappedfile import MappedFile
from rmqtool.structures import index
from rmqtool.structures.index import kernel as indexkernel


class IndexFile:
    """One index file: a mapped file plus its header fields. Only the newest file of a store is
    written, so the others are mapped only while someone reads them (`open`), never all at once."""

    def __init__(self, path: Path, file_len: int, hash_slots: int, index_num: int, mf: MappedFile | None = None) \
            -> None:
        self.path, self.file_len, self.hash_slots, self.index_num = path, file_len, hash_slots, index_num
        self._mf = mf

    @property
    def mf(self) -> MappedFile:
        """The file's mapping, made again when the file was retired."""
        if self._mf is None or self._mf.map.closed:
            self._mf = MappedFile(self.path, self.file_len)
        return self._mf

    def retire(self) -> None:
        """Flush and unmap the file (a full one: its mapping and descriptor are not needed any more)."""
        if self._mf is not None and not self._mf.map.closed:
            self._mf.wrote = self._mf.size
            self._mf.flush()
            self._mf.close()
        self._mf = None

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def header(self) -> np.void:
        if self._mf is None or self._mf.map.closed:  # a retired file: its header read, not mapped again
            return index.read_header(self.path)
        return index.decode_header(self._mf.map).copy()  # a view would keep the map from closing on retire

    @property
    def full(self) -> bool:
        return int(self.header["indexCount"]) >= self.index_num

    def release_entries(self) -> None:
        """Unmap the entries written so far (they are appended in order; the slot table stays mapped)."""
        entries_at = index.entries_offset(self.hash_slots)
        page = mmap.PAGESIZE
        self.mf.released = max(self.mf.released, -(-entries_at // page) * page)  # header and slots stay mapped
        self.mf.release(index.entry_position(self.hash_slots, int(self.header["indexCount"])))

    def put(self, hashes: np.ndarray, phys: np.ndarray, times: np.ndarray, start: int) -> int:
        """Put keys from `start` until full; returns the next key to put."""
        return indexkernel.put_keys(self.mf.arr, self.hash_slots, self.index_num, hashes, phys, times,
                                    start, len(hashes))


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
        mf = MappedFile(self.directory / name, self.file_len, create=True, preallocate=self.preallocate)
        index.put_header(mf.map, indexkernel.new_header(end_phy, end_ts))
        f = IndexFile(mf.path, self.file_len, self.hash_slots, self.index_num, mf)
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
