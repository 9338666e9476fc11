"""Java's String.hashCode over UTF-16 code units, so non-BMP text hashes as the broker's does."""

from __future__ import annotations

import struct

_INT_MASK = 0xFFFFFFFF


def to_int32(value: int) -> int:
    """Wrap an integer to a signed 32-bit Java int."""
    value &= _INT_MASK
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


def java_string_hash(text: str) -> int:
    """`text.hashCode()` as Java computes it: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 units."""
    h = 0
    if text.isascii():
        for ch in text.encode("ascii"):
            h = (31 * h + ch) & _INT_MASK
    else:
        units = text.encode("utf-16-be", "surrogatepass")
        for (unit,) in struct.iter_unpack(">H", units):
            h = (31 * h + unit) & _INT_MASK
    return to_int32(h)
