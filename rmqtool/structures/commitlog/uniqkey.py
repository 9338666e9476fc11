"""The client's unique message id (UNIQ_KEY, MessageClientIDSetter): 16 bytes as 32 hex digits.

Layout: client IPv4 address (4), process id (2), a per-process random (4), milliseconds since
the start of the current month (4), a counter (2).
"""

from __future__ import annotations

import itertools
import os
import struct
import time
from typing import TYPE_CHECKING

from rmqtool.structures.commitlog.hosts import IPV4_LEN, IPV6_LEN

if TYPE_CHECKING:
    import numpy as np

_FIXED = struct.Struct(">4sHi")
_VARIABLE = struct.Struct(">iH")
_counter = itertools.count()
_PROCESS_SALT = int.from_bytes(os.urandom(4), "big", signed=True)


def _month_start_ms(now_ms: int) -> int:
    t = time.localtime(now_ms // 1000)
    return int(time.mktime((t.tm_year, t.tm_mon, 1, 0, 0, 0, 0, 0, -1)) * 1000)


def create(ip4: bytes, now_ms: int | None = None) -> str:
    """A new unique id for a message sent from `ip4`."""
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    fixed = _FIXED.pack(ip4[-4:].rjust(4, b"\0"), os.getpid() & 0xFFFF, _PROCESS_SALT)
    since = (now - _month_start_ms(now)) & 0x7FFFFFFF
    return (fixed + _VARIABLE.pack(since, next(_counter) & 0xFFFF)).hex().upper()


def address_parts(addr: np.ndarray, v6: np.ndarray) -> np.ndarray:
    """(n, 4) contiguous: what `create` takes of each host address, its last 4 bytes. `addr` holds (n, 16)
    address rows (an IPv4 address in the first 4 bytes), `v6` marks the IPv6 rows."""
    out = addr[:, :IPV4_LEN].copy()
    out[v6] = addr[v6, IPV6_LEN - IPV4_LEN : IPV6_LEN]
    return out


LEN = 32  # hex digits


def load_stamp(store_timestamp: int) -> tuple[int, int]:
    """(salt, time field) the keys of a load stored at `store_timestamp` start from."""
    return store_timestamp & 0xFFFFFFFF, (store_timestamp - _month_start_ms(store_timestamp)) & 0x7FFFFFFF


def decode(text: str) -> dict | None:
    """The fields of a client msgId (`create`'s layout), or None when `text` is not 32 hex digits."""
    text = text.strip()
    if len(text) != LEN:
        return None
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        return None
    ip4, pid, salt = _FIXED.unpack_from(raw, 0)
    since, counter = _VARIABLE.unpack_from(raw, _FIXED.size)
    return {"msgId": text.upper(), "kind": "client", "clientAddress": ".".join(map(str, ip4)), "pid": pid,
            "salt": salt, "msSinceMonthStart": since, "counter": counter}
