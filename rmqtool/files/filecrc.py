"""CRC32C of whole files that skips their holes.

Staged files are preallocated at full size and mostly written only at the front, so their
checksum reads the extents that hold data and extends the CRC over each hole arithmetically
(a hole reads as zeros, and appending zeros is a linear map of the CRC register).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

_POLY = 0x82F63B78  # CRC32C (Castagnoli), reflected
_MASK = 0xFFFFFFFF
_READ_BLOCK = 8 << 20


def _times(matrix: tuple[int, ...], vector: int) -> int:
    out, row = 0, 0
    while vector:
        if vector & 1:
            out ^= matrix[row]
        vector >>= 1
        row += 1
    return out


@cache
def _zero_bits_power(k: int) -> tuple[int, ...]:
    """The register map for 2**k zero bits, as 32 column images."""
    if k == 0:
        return (_POLY, *(1 << i for i in range(31)))
    half = _zero_bits_power(k - 1)
    return tuple(_times(half, column) for column in half)


def extend_zeros(crc: int, count: int) -> int:
    """The CRC32C of the checksummed bytes followed by `count` zero bytes."""
    register, bits, k = crc ^ _MASK, count * 8, 0
    while bits:
        if bits & 1:
            register = _times(_zero_bits_power(k), register)
        bits >>= 1
        k += 1
    return register ^ _MASK


def data_extents(fd: int, size: int) -> list[tuple[int, int]] | None:
    """The [start, end) ranges of an open file that may hold data (the rest are holes, zeros);
    None when the file system cannot tell."""
    if not hasattr(os, "SEEK_DATA"):
        return None
    out, pos = [], 0
    try:
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:  # ENXIO: a hole runs to the end
                break
            pos = os.lseek(fd, start, os.SEEK_HOLE)
            out.append((start, min(pos, size)))
    except OSError:
        return None
    return out


def file_crc(path: Path) -> tuple[int, int]:
    """(size, CRC32C) of a file, reading only its data extents."""
    import crc32c  # 25-50 ms to load: only commands that checksum files pay it

    value, done = 0, 0
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if not size:
            return 0, 0
        block = memoryview(bytearray(_READ_BLOCK))  # read into one buffer: memory stays flat whatever the file
        extents = data_extents(f.fileno(), size)
        for start, end in [(0, size)] if extents is None else extents:
            value = extend_zeros(value, start - done)
            f.seek(start)
            at = start
            while at < end:
                n = f.readinto(block[: min(_READ_BLOCK, end - at)])
                if not n:
                    raise OSError(f"{path}: shorter than its size")
                value = crc32c.crc32c(block[:n], value)
                at += n
            done = end
    return size, extend_zeros(value, size - done)
