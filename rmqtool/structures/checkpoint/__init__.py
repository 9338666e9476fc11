"""The checkpoint file: one 4 KiB page of longs (three in 4.9, five in 5.x)."""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.structures.layout import Layout

FILE_LEN = 4096
FIELDS_49 = ("physicMsgTimestamp", "logicsMsgTimestamp", "indexMsgTimestamp")
FIELDS_5X = ("masterFlushedOffset", "confirmPhyOffset")
LAYOUT = Layout.of(*((name, ">i8") for name in FIELDS_49))  # the 4.9 page's longs, at the offsets verify names
_LONGS_49 = LAYOUT.codec
_LONGS_5X = struct.Struct(">qqqqq")
MIN_LEN = _LONGS_49.size  # 24: a shorter file cannot hold the three 4.9 longs
RECOVERY_MARGIN_MS = 3000  # the broker's min timestamp backs off 3 s


@dataclass(frozen=True)
class Checkpoint:
    physicMsgTimestamp: int = 0
    logicsMsgTimestamp: int = 0
    indexMsgTimestamp: int = 0
    masterFlushedOffset: int | None = None  # 5.x only
    confirmPhyOffset: int | None = None  # 5.x only

    def min_timestamp(self, index_safe: bool = False) -> int:
        """The broker's recovery point: min(physic, logics) (and index when index-safe) minus 3 s."""
        low = min(self.physicMsgTimestamp, self.logicsMsgTimestamp)
        if index_safe:
            low = min(low, self.indexMsgTimestamp)
        return max(low - RECOVERY_MARGIN_MS, 0)

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def refusal(buf) -> str | None:
    """Why `buf` cannot be read as a checkpoint (too short for its longs), or None."""
    if len(buf) < MIN_LEN:
        return f"{len(buf)} bytes is too small for a checkpoint ({MIN_LEN} bytes at least)"
    return None


def decode_checked(buf, path: Path) -> Checkpoint:
    """`decode`, or the one-line refusal naming `path` (every reader and writer of a checkpoint file reads it so)."""
    reason = refusal(buf)
    if reason is not None:
        raise RmqError(f"{path}: {reason}")
    return decode(buf)


def decode(buf) -> Checkpoint:
    """A checkpoint page of at least MIN_LEN bytes; the 5.x longs are reported when any of them is set."""
    if len(buf) >= _LONGS_5X.size:
        values = _LONGS_5X.unpack_from(buf, 0)
        if any(values[3:]):
            return Checkpoint(*values)
    return Checkpoint(*_LONGS_49.unpack_from(buf, 0))


def encode(cp: Checkpoint) -> bytes:
    page = bytearray(FILE_LEN)
    if cp.masterFlushedOffset is None and cp.confirmPhyOffset is None:
        _LONGS_49.pack_into(page, 0, cp.physicMsgTimestamp, cp.logicsMsgTimestamp, cp.indexMsgTimestamp)
    else:
        _LONGS_5X.pack_into(page, 0, cp.physicMsgTimestamp, cp.logicsMsgTimestamp, cp.indexMsgTimestamp,
                            cp.masterFlushedOffset or 0, cp.confirmPhyOffset or 0)
    return bytes(page)
