"""The consume queues' part of the broker's cleanup (CleanConsumeQueueService): files orphaned when the
commitlog's minimum offset moves up. A queue file whose last written entry points below it goes, oldest
first, up to the first one that does not (never a queue's newest file)."""

from __future__ import annotations

from pathlib import Path

from rmqtool.files.paths import parse_offset_name
from rmqtool.files.segments import open_read_only
from rmqtool.structures.consumequeue import decode_entries, written_count
from rmqtool.structures.structure import orphan_reason


def orphaned_files(directory: Path, min_offset: int) -> list[tuple[str, str]]:
    """(file, reason) of the queue files under `directory` (a store's consumequeue/) orphaned below
    `min_offset`, queue by queue in name order."""
    out = []
    if not directory.is_dir():
        return out
    for topic_dir in sorted(directory.iterdir()):
        for qdir in sorted(topic_dir.iterdir()) if topic_dir.is_dir() else []:
            files = [p for p in sorted(qdir.iterdir()) if parse_offset_name(p.name) is not None]
            for f in files[:-1]:
                with open_read_only(f) as buf:
                    entries = decode_entries(buf)
                    n = written_count(entries)
                    last = int(entries["commitLogOffset"][n - 1]) if n else -1
                    del entries
                if last >= min_offset:
                    break
                out.append((str(f), orphan_reason(min_offset)))
    return out
