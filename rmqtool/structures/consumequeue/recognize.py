"""Is this file a consume-queue file? A cheap check of its size and first entry, made before it is
decoded, loose enough to pass any queue file a broker wrote."""

from __future__ import annotations

from rmqtool.structures import consumequeue
from rmqtool.structures.plausible import LARGEST_PLAUSIBLE_ENTRY


def queue_file_refusal(head: bytes, size: int) -> str | None:
    """None when the file is whole entries whose first is unwritten, a filler or a real entry."""
    if size == 0 or size % consumequeue.ENTRY_LEN:
        return f"{size} bytes is not a whole number of {consumequeue.ENTRY_LEN}-byte entries"
    offset, length, _tags = consumequeue.ENTRY.codec.unpack_from(head, 0)
    if offset == 0 and length in (0, consumequeue.FILLER_SIZE):
        return None
    if offset >= 0 and 0 < length <= LARGEST_PLAUSIBLE_ENTRY:
        return None
    return f"its first entry (offset {offset}, size {length}) is not one a broker writes"
