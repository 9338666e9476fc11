"""The DLedger commitlog (`dledger-<id>/data/<offset>`): each message record wrapped in an entry.

Entry: magic(i4, 1), size(i4: header + body), index(i8), term(i8), pos(i8: the entry's own
offset), channel(i4), chainCrc(i4), bodyCrc(i4), bodyLength(i4), then the body: one commitlog
record whose physicalOffset field is pos + 48, the offset its msgId and queue entries name.
A segment whose rest cannot hold the next entry ends in a blank: -1(i4), bytes left(i4).
"""

from __future__ import annotations

from rmqtool.structures.layout import Layout

ENTRY = Layout.of(("magic", ">i4"), ("size", ">i4"), ("index", ">i8"), ("term", ">i8"), ("pos", ">i8"),
                  ("channel", ">i4"), ("chainCrc", ">i4"), ("bodyCrc", ">i4"), ("bodyLength", ">i4"))
BODY_OFFSET = ENTRY.size  # 48: where the record starts inside an entry
ENTRY_MAGIC = 1
BLANK_MAGIC = -1
BLANK_LEN = 8  # magic and the bytes left
SIZE_OFFSET = ENTRY.offset("size")
POS_OFFSET = ENTRY.offset("pos")
BODY_LENGTH_OFFSET = ENTRY.offset("bodyLength")
DATA_DIR, INDEX_DIR = "data", "index"


def starts_entry(head: bytes) -> bool:
    """Whether `head` (a file's first 8 bytes or more) starts a DLedger entry or its blank marker."""
    if len(head) < BLANK_LEN:
        return False
    first, second = ENTRY.codec.unpack_from(head.ljust(ENTRY.size, b"\0"), 0)[:2]
    return first in (ENTRY_MAGIC, BLANK_MAGIC) and second > 0
