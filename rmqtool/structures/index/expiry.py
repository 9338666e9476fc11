"""The index's part of the broker's cleanup (IndexService.deleteExpiredFile): files orphaned when the
commitlog's minimum offset moves up. An index file whose endPhyOffset is below it goes, oldest first, up
to the first one that is not (never the newest file)."""

from __future__ import annotations

from pathlib import Path

from rmqtool.files.segments import open_read_only
from rmqtool.structures.index import file_names, header_of
from rmqtool.structures.structure import orphan_reason


def orphaned_files(directory: Path, min_offset: int) -> list[tuple[str, str]]:
    """(file, reason) of the index files in `directory` (a store's index/) orphaned below `min_offset`."""
    out = []
    if not directory.is_dir():
        return out
    for f in [directory / name for name in file_names(directory)][:-1]:
        with open_read_only(f) as buf:
            head = header_of(buf)
            end = int(head["endPhyOffset"]) if head is not None else 0
        if end >= min_offset:
            break
        out.append((str(f), orphan_reason(min_offset)))
    return out
