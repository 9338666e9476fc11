"""The unique keys of loaded rows, written as hex digits straight into their properties bytes, compiled.

A key is a pure function of the born address, the load's stamp (`uniqkey.load_stamp`) and
the row's number in the load, so a load and its re-run agree. It is laid out as a
producer's id: address, 0 for the pid, the load's salt for the process random, then time
and counter as if the rows were sent 65536 per millisecond.
"""

from __future__ import annotations

import numpy as np

from rmqtool.structures.jit import kernel

_HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
_COUNTER_SPAN = 1 << 16


@kernel(nogil=True)
def _put(buf, at, ip4, rows, salt, since, hexdigits):
    raw = np.zeros(16, dtype=np.uint8)
    for k in range(at.shape[0]):
        row = rows[k]
        raw[0:4] = ip4[k]
        for j in range(4):
            raw[6 + j] = (salt >> (24 - 8 * j)) & 0xFF
        t = (since + row // _COUNTER_SPAN) & 0x7FFFFFFF
        for j in range(4):
            raw[10 + j] = (t >> (24 - 8 * j)) & 0xFF
        c = row % _COUNTER_SPAN
        raw[14] = (c >> 8) & 0xFF
        raw[15] = c & 0xFF
        w = at[k]
        for j in range(16):
            buf[w + 2 * j] = hexdigits[raw[j] >> 4]
            buf[w + 2 * j + 1] = hexdigits[raw[j] & 0xF]


def put_load_keys(buf: np.ndarray, at: np.ndarray, ip4: np.ndarray, stamp: tuple[int, int], rows: np.ndarray) -> None:
    """Write the unique key of each row as 32 hex digits at buf[at[k]:]."""
    salt, since = stamp
    _put(buf, at.astype(np.int64), np.ascontiguousarray(ip4, dtype=np.uint8), rows.astype(np.int64), salt, since,
         _HEX)


