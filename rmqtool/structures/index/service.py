"""The store's hash index as its writer sees it, as the broker's IndexService owns its IndexFiles.

Keys go into the newest file (`file.IndexFile`) until it is full (indexCount = maxIndexNum); the next
file is named after the newest (`index.name_after`) and starts where the previous one ended. A message
at an offset below the newest file's endPhyOffset was indexed already and is skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rmqtool.errors import RmqError
from rmqtool.structures import index
from rmqtool.structures.index.file import IndexFile

if TYPE_CHECKING:
    import numpy as np


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class IndexService:
    """The index files of `directory`, written with `hash_slots` slots and `index_num` entries a file;
    `preallocate` allocates a new file whole (the broker's warmMapedFileEnable), `clock` (ms since the
    epoch) names new files."""

    def __init__(self, directory: Path, hash_slots: int, index_num: int, *, preallocate: bool = False,
                 clock: Callable[[], int] | None = None) -> None:
        self.directory = Path(directory)
        self.clock = clock or wall_clock_ms
        self.hash_slots, self.index_num, self.preallocate = hash_slots, index_num, preallocate
        self.file_len = index.file_len(hash_slots, index_num)
        self.last_full_end_timestamp = 0  # the checkpoint's indexMsgTimestamp: set when a full file is left
        self.files = [IndexFile(self.directory / name, self.file_len, hash_slots, index_num)
                      for name in index.file_names(self.directory)]
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
        name = index.name_after(prev.name if prev is not None else None, self.clock(),
                                taken=lambda n: (self.directory / n).exists())
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

    def mark(self) -> tuple[int, bytes, int]:
        """Where the index ends now, for `truncate_to`: its file count, the newest file's header bytes (none
        without a file) and the checkpoint's indexMsgTimestamp it would write."""
        header = index.header_bytes(self.files[-1].mf.map) if self.files else b""
        return len(self.files), header, self.last_full_end_timestamp

    def truncate_to(self, files: int, header: bytes, last_full: int) -> None:
        """Take back every key put since `mark` said (`files`, `header`, `last_full`): files made since are
        deleted, also one made on disk but cut off before it was listed, and the newest gets its entries back."""
        while len(self.files) > files:
            self.files.pop().mf.destroy()
        kept = max((f.name for f in self.files), default="")
        for name in index.file_names(self.directory):
            if name > kept:
                (self.directory / name).unlink()
        self.last_full_end_timestamp = last_full
        if self.files:
            self.files[-1].truncate_to(header)

    def flush(self) -> None:
        for f in self.files[-1:]:  # the others were flushed when they were retired
            f.mf.wrote = f.mf.size
            f.mf.flush()

    def close(self) -> None:
        for f in self.files:
            f.retire()
