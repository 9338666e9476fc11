"""Is this file a commitlog segment? A cheap check of its first bytes, made before it is decoded, loose
enough to pass any segment a broker wrote (damage past the first record included)."""

from __future__ import annotations

from rmqtool.structures.commitlog import message
from rmqtool.structures.plausible import head_words


def segment_refusal(head: bytes) -> str | None:
    """None when `head` starts a record, an end-of-segment marker or unwritten zeros; else the reason it
    cannot be a plain segment (the log's other implementations recognise their own: `CommitLog.variants`)."""
    if len(head) < message.PREFIX.size:
        return f"{len(head)} bytes is shorter than a record's first fields"
    size, magic = message.PREFIX.unpack_from(head, 0)
    if size == 0 and magic == 0:
        return None
    if magic in (message.MAGIC_V1, message.MAGIC_V2, message.BLANK_MAGIC) and size > 0:
        return None
    return f"it starts with {head_words(head)}, which is neither a record, an end marker nor unwritten bytes"
