"""Is this file what the user says it is? Cheap checks of a file's first bytes and its size, made
before a file is decoded, so that a text file is refused instead of decoded as garbage.

Each check returns None when the bytes could be the named kind of file, or the reason they cannot.
The checks are loose enough to pass any file a broker wrote, damaged ones included, where the damage
is past the first record or entry.
"""

from __future__ import annotations

import struct

from rmqtool.structures import checkpoint, consumequeue, dledger, index
from rmqtool.structures.commitlog import message

LATEST_PLAUSIBLE_MS = 7_258_118_400_000  # 2200-01-01: a stored time past this is not a time
LARGEST_PLAUSIBLE_ENTRY = 1 << 28  # no message of any broker is 256 MiB; four text bytes read as a size are more
QUEUE_FILLER_SIZE = 0x7FFFFFFF  # entries a queue is padded with before its first message have this size
_INT = struct.Struct(">i")


def _plausible_time(ms: int) -> bool:
    return 0 <= ms < LATEST_PLAUSIBLE_MS


def _head_words(head: bytes) -> str:
    return head[:8].hex().upper()


def segment_refusal(head: bytes) -> str | None:
    """A commitlog segment starts with a record, an end-of-segment marker or unwritten zeros (a DLedger
    data file with an entry or its blank marker)."""
    if len(head) < message.PREFIX.size:
        return f"{len(head)} bytes is shorter than a record's first fields"
    size, magic = message.PREFIX.unpack_from(head, 0)
    if size == 0 and magic == 0:
        return None
    if magic in (message.MAGIC_V1, message.MAGIC_V2, message.BLANK_MAGIC) and size > 0:
        return None
    (first,) = _INT.unpack_from(head, 0)
    if first in (dledger.ENTRY_MAGIC, dledger.BLANK_MAGIC) and magic > 0:
        return None
    return f"it starts with {_head_words(head)}, which is neither a record, an end marker nor unwritten bytes"


def queue_file_refusal(head: bytes, size: int) -> str | None:
    """A consume-queue file is whole 20-byte entries; its first is unwritten, a filler or a real entry."""
    if size == 0 or size % consumequeue.ENTRY_LEN:
        return f"{size} bytes is not a whole number of {consumequeue.ENTRY_LEN}-byte entries"
    offset, length, _tags = consumequeue.ENTRY.codec.unpack_from(head, 0)
    if offset == 0 and length in (0, QUEUE_FILLER_SIZE):
        return None
    if offset >= 0 and 0 < length <= LARGEST_PLAUSIBLE_ENTRY:
        return None
    return f"its first entry (offset {offset}, size {length}) is not one a broker writes"


def index_file_refusal(head: bytes, size: int) -> str | None:
    """An index file starts with a header of two times, two physical offsets and two counts."""
    if size < index.HEADER_LEN:
        return f"{size} bytes is shorter than an index header ({index.HEADER_LEN} bytes)"
    h = index.HEADER.codec.unpack_from(head, 0)
    begin_ts, end_ts, begin_off, end_off, slots, count = h
    if not (_plausible_time(begin_ts) and _plausible_time(end_ts)):
        return f"its header times ({begin_ts}, {end_ts}) are not epoch milliseconds"
    if begin_off < 0 or end_off < 0 or slots < 0 or count < 0:
        return f"its header holds negative offsets or counts ({begin_off}, {end_off}, {slots}, {count})"
    return None


def checkpoint_refusal(buf: bytes) -> str | None:
    """A checkpoint holds flush times (epoch ms, or 0 before the first flush)."""
    reason = checkpoint.refusal(buf)
    if reason is not None:
        return reason
    cp = checkpoint.decode(buf)
    times = (cp.physicMsgTimestamp, cp.logicsMsgTimestamp, cp.indexMsgTimestamp)
    if not all(_plausible_time(t) for t in times):
        return f"its flush times {times} are not epoch milliseconds"
    return None
