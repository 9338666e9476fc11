"""A store's index files read with its settings: the one place an index file's geometry is resolved.

`config` below is the store's settings (`settings.StoreSettings`): `maxHashSlotNum` and `maxIndexNum`; `given`
names the settings a broker.conf set.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rmqtool.errors import RmqError
from rmqtool.files.segments import map_file
from rmqtool.structures import index
from rmqtool.structures.index import chain
from rmqtool.structures.index.chain import entries_held
from rmqtool.structures.index.geometry import file_geometry
from rmqtool.structures.settings import StoreSettings

if TYPE_CHECKING:
    import numpy as np


@dataclass
class IndexFileView:
    """One index file mapped read-only, with its header (as JSON) and its geometry."""

    path: Path
    header: dict
    hash_slots: int
    index_num: int
    buf: bytes

    @property
    def held(self) -> int:
        """The entries its header counts (`chain.entries_held`)."""
        return entries_held(self.header["indexCount"], self.index_num)

    def slots(self) -> np.ndarray:
        return index.decode_slots(self.buf, self.hash_slots)

    def entries(self) -> np.ndarray:
        """Entries 1 .. indexCount-1 (the used ones), with their entry numbers."""
        return index.decode_entries(self.buf, self.hash_slots, index.FIRST_INDEX + self.held)[index.FIRST_INDEX :]

    def entry_rows(self) -> list[dict]:
        """Each used entry as data: its number, fields, the time its timeDiff gives and its slot."""
        entries = self.entries()
        begin = self.header["beginTimestamp"]
        return [{"entry": n, "keyHash": h, "phyOffset": off, "timeDiff": td, "timestamp": begin + td * 1000,
                 "prevIndex": prev, "slot": index.slot_of(h, self.hash_slots)}
                for n, h, off, td, prev in zip(range(index.FIRST_INDEX, index.FIRST_INDEX + len(entries)),
                                               entries["keyHash"].tolist(), entries["phyOffset"].tolist(),
                                               entries["timeDiff"].tolist(), entries["prevIndex"].tolist(),
                                               strict=True)]

    def chain_lengths(self) -> dict[str, int]:
        """How many slots naming a written entry have a chain of each length ("1": slots, "2": ...), each
        chain as a lookup walks it (`chain.lengths`)."""
        import numpy as np

        found = chain.lengths(self.buf, self.hash_slots, chain.entry_bound(self.header["indexCount"], self.index_num),
                              self.header["beginTimestamp"])
        counts = np.bincount(found) if found.size else np.zeros(0, dtype=np.int64)
        return {str(n): int(c) for n, c in enumerate(counts.tolist()) if c}


class IndexFiles:
    """Index files read with a store's settings: the geometry from the config or, where the config
    does not set it, from each file's size."""

    def __init__(self, config: StoreSettings, given: Collection[str]) -> None:
        self.config = config
        self.given = given

    def index_file(self, path: Path) -> IndexFileView:
        buf = map_file(path)
        head = index.header_of(buf)
        if head is None:
            raise RmqError(f"{path}: {len(buf)} bytes is too small for an index file")
        header = index.header_to_json(head)
        return IndexFileView(path, header, *self.index_geometry(path, len(buf)), buf)

    def index_geometry(self, path: Path, size: int | None = None) -> tuple[int, int]:
        """(hash slots, index entries) of an index file: from the config, or inferred from its size."""
        size = path.stat().st_size if size is None else size
        slots, num = self.config.maxHashSlotNum, self.config.maxIndexNum
        slots, num = file_geometry(size, slots, num, self.given) or (slots, num)
        if index.file_len(slots, num) != size:
            raise RmqError(f"{path}: {size} bytes does not match maxHashSlotNum={slots}, maxIndexNum={num};"
                           " pass --config broker.conf")
        return slots, num

    def held(self, path: Path) -> int:
        """The entries the header of the file at `path` counts, capped at its geometry's maxIndexNum (the
        config's when its size fits none); 0 for a file shorter than a header."""
        head = index.read_header(path)
        if head is None:
            return 0
        try:
            num = self.index_geometry(path)[1]
        except RmqError:
            num = self.config.maxIndexNum
        return entries_held(int(head["indexCount"]), num)
