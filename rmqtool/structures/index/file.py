"""One index file of a store being written: its mapping, header, entries held and the keys put into it."""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import TYPE_CHECKING

from rmqtool.files.mappedfile import MappedFile
from rmqtool.structures import index
from rmqtool.structures.index import kernel
from rmqtool.structures.index.chain import entries_held, entry_bound
from rmqtool.structures.index.check import held

if TYPE_CHECKING:
    import numpy as np


class IndexFile:
    """One index file: a mapped file plus its header fields. Only the newest file of a store is
    written, so the others are mapped only while someone reads them (`open`), never all at once."""

    def __init__(self, path: Path, file_len: int, hash_slots: int, index_num: int, mf: MappedFile | None = None) \
            -> None:
        self.path, self.file_len, self.hash_slots, self.index_num = path, file_len, hash_slots, index_num
        self._mf = mf

    @classmethod
    def create(cls, path: Path, hash_slots: int, index_num: int, end_phy: int, end_ts: int, *,
               preallocate: bool = False) -> IndexFile:
        """A new file that starts where the previous one ended (`end_phy`, `end_ts`; 0 for the first)."""
        file_len = index.file_len(hash_slots, index_num)
        mf = MappedFile(path, file_len, create=True, preallocate=preallocate)
        index.put_header(mf.map, kernel.new_header(end_phy, end_ts))
        return cls(mf.path, file_len, hash_slots, index_num, mf)

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
    def held(self) -> int:
        """The entries its header counts (`chain.entries_held`)."""
        return entries_held(int(self.header["indexCount"]), self.index_num)

    @property
    def full(self) -> bool:
        return int(self.header["indexCount"]) >= self.index_num

    def release_entries(self) -> None:
        """Unmap the entries written so far (they are appended in order; the slot table stays mapped)."""
        entries_at = index.entries_offset(self.hash_slots)
        page = mmap.PAGESIZE
        self.mf.released = max(self.mf.released, -(-entries_at // page) * page)  # header and slots stay mapped
        self.mf.release(index.entry_position(self.hash_slots, int(self.header["indexCount"])))

    def truncate_to(self, saved: bytes) -> None:
        """Take back every entry put since its header was `saved` (the header's bytes then): each slot they
        touched points again at the entry it held before, the entries are zeroed and the header restored. A
        writer killed inside a batch wrote entries its header does not count yet: those go too."""
        import numpy as np

        buf = self.mf.map
        before = entry_bound(index.header_of(saved)["indexCount"], self.index_num)
        capacity = index.decode_entries(buf, self.hash_slots, self.index_num)
        now = index.FIRST_INDEX + max(self.held, held(capacity[index.FIRST_INDEX:]))
        del capacity
        if now > before:
            entries = index.decode_entries(buf, self.hash_slots, now)[before:]
            slots = entries["keyHash"].astype(np.int64) % self.hash_slots
            touched, first = np.unique(slots, return_index=True)
            table = index.decode_slots(buf, self.hash_slots)
            table[touched] = entries["prevIndex"][first]
            del entries, table  # views of the map
            lo, hi = index.entry_position(self.hash_slots, before), index.entry_position(self.hash_slots, now)
            buf[lo:hi] = bytes(hi - lo)
        index.put_header(buf, saved)

    def put(self, hashes: np.ndarray, phys: np.ndarray, times: np.ndarray, start: int) -> int:
        """Put keys from `start` until full; returns the next key to put."""
        return kernel.put_keys(self.mf.arr, self.hash_slots, self.index_num, hashes, phys, times, start, len(hashes))
