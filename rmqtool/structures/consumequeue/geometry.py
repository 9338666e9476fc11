"""The size of a store's consume-queue files as its files show it: every file of a queue is made
whole (sparse or not), so a queue's first file has the store's size."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from rmqtool.files.paths import parse_offset_name
from rmqtool.structures.consumequeue import ENTRY_LEN

SAMPLED_QUEUES = 16  # first files looked at: a few stats, not a walk of the store


def first_file_sizes(root: Path, queues: int = SAMPLED_QUEUES) -> list[int]:
    """Sizes of the first file of up to `queues` queues under `root` (the consumequeue folder)."""
    sizes: list[int] = []
    try:
        topics = sorted(e.path for e in os.scandir(root) if e.is_dir())
    except OSError:
        return sizes
    for topic in topics:
        for queue in sorted(e.path for e in os.scandir(topic) if e.is_dir())[:2]:
            names = sorted(e.name for e in os.scandir(queue) if parse_offset_name(e.name) is not None)
            if names:
                sizes.append(os.stat(Path(queue) / names[0]).st_size)
            if len(sizes) >= queues:
                return sizes
    return sizes


def file_size_of(sizes: list[int]) -> int | None:
    """The size most first files have, when it is a whole number of entries."""
    fitting = Counter(s for s in sizes if s > 0 and s % ENTRY_LEN == 0)
    return fitting.most_common(1)[0][0] if fitting else None


def size_refusal(size: int) -> str | None:
    """Why the broker could not run with queue files of `size` bytes (None when it could)."""
    if size <= 0 or size % ENTRY_LEN:
        return f"mappedFileSizeConsumeQueue={size} is not a positive multiple of {ENTRY_LEN}"
    return None
