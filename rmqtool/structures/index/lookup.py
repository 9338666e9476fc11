"""A key looked up in a store's index files, as the broker's IndexService.queryOffset does.

The rule, written once: files are read newest first; a file is searched when its [beginTimestamp,
endTimestamp] overlaps the lookup's [begin, end] (either end inside it, or it inside the lookup); its
bucket's chain is followed by `chain.walk`, keeping entries of the key's hash timed within [begin, end];
the lookup stops after `max_hits`, or after the first file that begins before `begin` (older files hold
older keys only). Each file is read with a few `pread`s (header, slot, the chain's entries), not mapped:
a store with tens of thousands of small index files would otherwise keep a map of each. A file its size
does not fit the store's geometry (a cut file) is skipped, with a warning (`Lookup.skipped`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.structures import index
from rmqtool.structures.index import chain
from rmqtool.structures.index.check import file_size
from rmqtool.structures.index.files import IndexFiles

Geometry = Callable[[str, int], "tuple[int, int] | None"]  # (path, size) -> (slots, entries); None: skip the file


class Lookup:
    """Keys looked up in the index files of a store's `directory`, read with its settings (`files`): each
    file's geometry worked out once per size, a file no geometry fits skipped and named in `skipped`."""

    def __init__(self, files: IndexFiles, directory: Path) -> None:
        self.files = files
        self.paths = [os.path.join(directory, name) for name in index.file_names(directory)]  # oldest first
        self._geometries: dict[int, tuple[int, int] | None] = {}
        self.skipped: dict[str, str] = {}  # index file -> why lookups skip it (a warning to show)

    def geometry(self, path: str, size: int) -> tuple[int, int] | None:
        """(hash slots, entries) of an index file of `size` bytes; None, and a warning, for a file its size does
        not fit (a cut file): the lookup skips it."""
        if size not in self._geometries:
            try:
                self._geometries[size] = self.files.index_geometry(Path(path), size)
            except RmqError:
                self._geometries[size] = None
        found = self._geometries[size]
        if found is None and path not in self.skipped:
            cfg = self.files.config
            reason = file_size(path, size, cfg.maxHashSlotNum, cfg.maxIndexNum).reason
            self.skipped[path] = f"{path}: {reason}; the lookup skipped it"
        return found

    def offsets(self, topic: str, key: str, begin: int, end: int, max_hits: int) -> list[int]:
        """The raw hits (physical offsets) for topic#key, newest first."""
        return offsets(self.paths, self.geometry, index.key_hash(index.index_key(topic, key)), begin, end, max_hits)


def overlaps(begin_ts: int, end_ts: int, begin: int, end: int) -> bool:
    """Whether a file timed [begin_ts, end_ts] is searched by a lookup of [begin, end]."""
    return (begin < begin_ts and end > end_ts) or begin_ts <= begin <= end_ts or begin_ts <= end <= end_ts


def offsets(paths: list[str], geometry: Geometry, key_hash: int, begin: int, end: int, max_hits: int) -> list[int]:
    """The raw hits (physical offsets) for `key_hash` in the files of `paths` (oldest first), newest first."""
    hits: list[int] = []
    for path in reversed(paths):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            raise RmqError(f"cannot open {path}: {e.strerror}") from None
        try:
            shape = geometry(path, os.fstat(fd).st_size)
            if shape is None:
                continue
            begin_ts, end_ts, _, _, _, count = chain.header_fields(chain.pread_reader(fd))
            if overlaps(begin_ts, end_ts, begin, end):
                _chain(fd, shape, count, begin_ts, key_hash, begin, end, max_hits, hits)
        finally:
            os.close(fd)
        if begin_ts < begin or len(hits) >= max_hits:
            break
    return hits


def _chain(fd: int, geometry: tuple[int, int], count: int, begin_ts: int, key_hash: int, begin: int, end: int,
           max_hits: int, hits: list[int]) -> None:
    """The hits of one file: its bucket's chain walked by the broker's rule (`chain.walk`), keeping
    entries of this hash timed within [begin, end]."""
    slots, num = geometry
    walk = chain.walk(chain.pread_reader(fd), slots, chain.entry_bound(count, num), begin_ts,
                      index.slot_of(key_hash, slots), begin)
    for link in walk:
        if link.key_hash == key_hash and begin <= link.timestamp <= end:
            hits.append(link.phy_offset)
            if len(hits) >= max_hits:
                return
