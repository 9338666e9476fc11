"""The client's unique message id (UNIQ_KEY, MessageClientIDSetter): 16 bytes as 32 hex digits.

Layout: client IPv4 address (4), process id (2), a per-process random (4), milliseconds since
the start of the current month (4), a counter (2).
"""

from __future__ import annotations

import itertools
import os
import struct
import time

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


LEN = 32  # hex digits
_HEX = b"0123456789ABCDEF"
_COUNTER_SPAN = 1 << 16


def load_stamp(store_timestamp: int) -> tuple[int, int]:
    """(salt, time field) the keys of a load stored at `store_timestamp` start from."""
    return store_timestamp & 0xFFFFFFFF, (store_timestamp - _month_start_ms(store_timestamp)) & 0x7FFFFFFF


def for_load(ip4, stamp: tuple[int, int], rows):
    """The unique ids of loaded rows as (n, 32) ASCII hex digits, a pure function of the born
    address (n, 4), the load's stamp and each row's number in the load, so a load and its re-run
    agree. Laid out as a producer's id: address, 0 for the pid, the load's salt for the process
    random, then time and counter as if the rows were sent 65536 per millisecond."""
    import numpy as np  # not at module level: the CLI's start does not load numpy

    hexdigits = np.frombuffer(_HEX, dtype=np.uint8)
    salt, since = stamp
    rows = np.asarray(rows, dtype=np.int64)
    raw = np.zeros((len(rows), 16), dtype=np.uint8)
    raw[:, :4] = ip4
    raw[:, 6:10] = np.frombuffer(salt.to_bytes(4, "big"), dtype=np.uint8)
    t = ((since + rows // _COUNTER_SPAN) & 0x7FFFFFFF).astype(">u4")
    raw[:, 10:14] = t.view(np.uint8).reshape(-1, 4)
    raw[:, 14:16] = (rows % _COUNTER_SPAN).astype(">u2").view(np.uint8).reshape(-1, 2)
    out = np.empty((len(rows), LEN), dtype=np.uint8)
    out[:, 0::2] = hexdigits[raw >> 4]
    out[:, 1::2] = hexdigits[raw & 0xF]
    return out
