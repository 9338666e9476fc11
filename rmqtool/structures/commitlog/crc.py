"""Checksums a record carries: the body CRC (4.9) and the 5.x `__CRC32#` tail property."""

from __future__ import annotations

import zlib

from rmqtool.structures.commitlog.properties import CRC32, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR

POSITIVE_MASK = 0x7FFFFFFF
CRC32_DIGITS = 10
CRC32_PROPERTY = (CRC32 + NAME_VALUE_SEPARATOR).encode()
CRC32_RESERVED_LEN = len(CRC32_PROPERTY) + CRC32_DIGITS + len(PROPERTY_SEPARATOR)


def body_crc(body) -> int:
    """java.util.zip.CRC32 of the body, masked positive as the store records it."""
    return zlib.crc32(body) & POSITIVE_MASK


def encode_tail_crc(crc: int) -> bytes:
    """The 20-byte `__CRC32#` property: ten decimal digits, least significant first."""
    digits = bytearray()
    for _ in range(CRC32_DIGITS):
        digits.append(ord("0") + crc % 10)
        crc //= 10
    return CRC32_PROPERTY + bytes(digits) + PROPERTY_SEPARATOR.encode()


def check_tail_crc(record) -> bool | None:
    """True/False when the record ends with a `__CRC32#` property, None when it has none."""
    tail = bytes(record[len(record) - CRC32_RESERVED_LEN :])
    if not tail.startswith(CRC32_PROPERTY):
        return None
    crc = zlib.crc32(record[: len(record) - CRC32_RESERVED_LEN]) & POSITIVE_MASK
    return tail == encode_tail_crc(crc)
