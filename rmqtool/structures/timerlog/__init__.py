"""The 5.x timer log (`timerlog/<offset>`): one 52-byte unit per timer message put into the wheel.

Unit: size(i4, always 52), prevPos(i8: the previous unit of the same wheel slot, -1 none),
magic(i4: flags), writeTime(i8), delayMs(i4: delivery time - writeTime), commitLogOffset(i8),
commitLogSize(i4), topicHash(i4: hash of the real topic, for metrics), reserved(i8).
A segment whose rest cannot hold a unit and a 16-byte blank ends in a blank: size(i4: bytes
left), 0(i8), BLANK_MAGIC(i4), in the place of a unit's size, prevPos and magic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqtool.structures.layout import Layout

if TYPE_CHECKING:
    import numpy as np

UNIT = Layout.of(("size", ">i4"), ("prevPos", ">i8"), ("magic", ">i4"), ("writeTime", ">i8"), ("delayMs", ">i4"),
                 ("commitLogOffset", ">i8"), ("commitLogSize", ">i4"), ("topicHash", ">i4"), ("reserved", ">i8"))
UNIT_LEN = UNIT.size  # 52
BLANK = Layout.of(("size", ">i4"), ("zero", ">i8"), ("magic", ">i4"))
BLANK_LEN = BLANK.size  # 16
BLANK_MAGIC = -875286124  # 0xBBCCDDEE ^ (1880681586 + 8) as a signed int
DEFAULT_FILE_SIZE = 100 << 20
TIMER_FILES = ("timerwheel", "timerlog", "timercheck")  # what a 5.x broker's timer store writes at the root

MAGIC_DEFAULT, MAGIC_ROLL, MAGIC_DELETE = 1, 2, 4
FLAG_NAMES = ((MAGIC_ROLL, "roll"), (MAGIC_DELETE, "delete"))


def magic_ok(magic: int) -> bool:
    """A unit's magic: the default bit, with roll and delete bits only."""
    return (magic & MAGIC_DEFAULT) != 0 and (magic & ~(MAGIC_DEFAULT | MAGIC_ROLL | MAGIC_DELETE)) == 0


def flags(magic: int) -> list[str]:
    return [name for bit, name in FLAG_NAMES if magic & bit]


def decode_units(buf) -> np.ndarray:
    """Every whole 52-byte slot of `buf` as unit rows (a view)."""
    import numpy as np

    return np.frombuffer(buf, dtype=UNIT.dtype(), count=len(buf) // UNIT_LEN)


def encode_unit(prev_pos: int, magic: int, write_time: int, delay_ms: int, offset: int, size: int,
                topic_hash: int) -> bytes:
    return UNIT.codec.pack(UNIT_LEN, prev_pos, magic, write_time, delay_ms, offset, size, topic_hash, 0)


def encode_blank(left: int) -> bytes:
    return BLANK.codec.pack(left, 0, BLANK_MAGIC)
