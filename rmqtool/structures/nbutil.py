"""Helpers for compiled (numba) kernels: big-endian reads and writes, Java's String.hashCode
over UTF-8 bytes, and zlib's CRC-32 called from compiled code.

Kernels see files as flat uint8 arrays; these helpers are the only place they turn bytes
into numbers and back.
"""

from __future__ import annotations

import ctypes.util
import zlib

import numpy as np

from rmqtool.structures.jit import jitable

_INT_SPAN = np.int64(1) << 32
_INT_MAX = (np.int64(1) << 31) - 1
_REPLACEMENT = 0xFFFD
_SUPPLEMENTARY = 0x10000
_HIGH_SURROGATE = 0xD800
_LOW_SURROGATE = 0xDC00


@jitable(inline=True)
def get_i16(buf, p):
    v = (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
    return v - 65536 if v >= 32768 else v


@jitable(inline=True)
def get_i32(buf, p):
    v = (np.int64(buf[p]) << 24) | (np.int64(buf[p + 1]) << 16) | (np.int64(buf[p + 2]) << 8) | np.int64(buf[p + 3])
    return v - _INT_SPAN if v > _INT_MAX else v


@jitable(inline=True)
def get_i64(buf, p):
    v = np.int64(0)
    for k in range(8):
        v = (v << 8) | np.int64(buf[p + k])
    return v


@jitable(inline=True)
def put_i16(buf, p, v):
    buf[p] = (v >> 8) & 0xFF
    buf[p + 1] = v & 0xFF


@jitable(inline=True)
def put_i32(buf, p, v):
    buf[p] = (v >> 24) & 0xFF
    buf[p + 1] = (v >> 16) & 0xFF
    buf[p + 2] = (v >> 8) & 0xFF
    buf[p + 3] = v & 0xFF


@jitable(inline=True)
def put_i64(buf, p, v):
    for k in range(8):
        buf[p + k] = (v >> (56 - 8 * k)) & 0xFF


@jitable(inline=True)
def _continuation(buf, p, end):
    return p < end and (buf[p] & 0xC0) == 0x80


@jitable
def java_hash_utf8(buf, start, end, h):
    """Continue Java's String.hashCode state `h` (0..2^32-1) over UTF-8 bytes buf[start:end].

    Code points above the BMP count as two UTF-16 units; a malformed byte counts as U+FFFD.
    Returns the new state; `to_java_int` turns a final state into the signed hash.
    """
    i = start
    while i < end:
        b0 = np.int64(buf[i])
        cp = np.int64(_REPLACEMENT)
        step = 1
        if b0 < 0x80:
            cp = b0
        elif 0xC2 <= b0 < 0xE0 and _continuation(buf, i + 1, end):
            cp = ((b0 & 0x1F) << 6) | (buf[i + 1] & 0x3F)
            step = 2
        elif 0xE0 <= b0 < 0xF0 and _continuation(buf, i + 1, end) and _continuation(buf, i + 2, end):
            v = ((b0 & 0x0F) << 12) | ((np.int64(buf[i + 1]) & 0x3F) << 6) | (buf[i + 2] & 0x3F)
            if v >= 0x800 and not (0xD800 <= v < 0xE000):
                cp = v
                step = 3
        elif 0xF0 <= b0 < 0xF5 and _continuation(buf, i + 1, end) and _continuation(buf, i + 2, end) \
                and _continuation(buf, i + 3, end):
            v = (((b0 & 0x07) << 18) | ((np.int64(buf[i + 1]) & 0x3F) << 12)
                 | ((np.int64(buf[i + 2]) & 0x3F) << 6) | (buf[i + 3] & 0x3F))
            if _SUPPLEMENTARY <= v < 0x110000:
                cp = v
                step = 4
        if cp >= _SUPPLEMENTARY:
            cp -= _SUPPLEMENTARY
            h = (h * 31 + _HIGH_SURROGATE + (cp >> 10)) & 0xFFFFFFFF
            h = (h * 31 + _LOW_SURROGATE + (cp & 0x3FF)) & 0xFFFFFFFF
        else:
            h = (h * 31 + cp) & 0xFFFFFFFF
        i += step
    return h


@jitable(inline=True)
def bytes_equal(buf, start, length, word):
    """Whether `buf[start:start + length]` holds the bytes of `word` (a uint8 array)."""
    if length != word.shape[0]:
        return False
    for k in range(length):  # noqa: SIM110 - a loop compiles; a generator does not
        if buf[start + k] != word[k]:
            return False
    return True


@jitable(inline=True)
def java_hash_step(h, unit):
    return (h * 31 + unit) & 0xFFFFFFFF


@jitable(inline=True)
def to_java_int(h):
    return h - _INT_SPAN if h > _INT_MAX else h


_CRC_POLY = 0xEDB88320


def _crc_tables() -> np.ndarray:
    """Slicing-by-8 tables of the reflected CRC-32 (java.util.zip.CRC32, zlib)."""
    t = np.zeros((8, 256), dtype=np.int64)
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ (_CRC_POLY if c & 1 else 0)
        t[0, b] = c
    for k in range(1, 8):
        t[k] = (t[k - 1] >> 8) ^ t[0][t[k - 1] & 0xFF]
    return t


CRC_TABLES = _crc_tables()


@jitable(inline=True)
def crc32_sliced(buf, i, length, tables):
    """CRC-32 of buf[i:i+length], eight bytes per step (slicing-by-8)."""
    t0, t1, t2, t3, t4, t5, t6, t7 = (tables[0], tables[1], tables[2], tables[3], tables[4], tables[5],
                                      tables[6], tables[7])
    e = i + length
    crc = np.int64(0xFFFFFFFF)
    while i + 8 <= e:
        one = crc ^ (np.int64(buf[i]) | (np.int64(buf[i + 1]) << 8) | (np.int64(buf[i + 2]) << 16)
                     | (np.int64(buf[i + 3]) << 24))
        two = (np.int64(buf[i + 4]) | (np.int64(buf[i + 5]) << 8) | (np.int64(buf[i + 6]) << 16)
               | (np.int64(buf[i + 7]) << 24))
        crc = (t7[one & 0xFF] ^ t6[(one >> 8) & 0xFF] ^ t5[(one >> 16) & 0xFF] ^ t4[one >> 24]
               ^ t3[two & 0xFF] ^ t2[(two >> 8) & 0xFF] ^ t1[(two >> 16) & 0xFF] ^ t0[two >> 24])
        i += 8
    while i < e:
        crc = t0[(crc ^ np.int64(buf[i])) & 0xFF] ^ (crc >> 8)
        i += 1
    return crc ^ 0xFFFFFFFF


_NATIVE_CRC32 = None  # zlib's or ISA-L's crc32, as numba calls it: set by `_crc32_compiled`
_NATIVE_FROM = 0


def _crc32_native(buf, start, length, tables):
    if length < _NATIVE_FROM:
        return crc32_sliced(buf, start, length, tables)
    return np.int64(_NATIVE_CRC32(0, buf[start:].ctypes.data, length))


def _crc32_compiled():
    """The compiled `crc32`: zlib's own (or ISA-L's) from the inputs where it is faster than the inline loop."""
    global _NATIVE_CRC32, _NATIVE_FROM
    import llvmlite.binding as llvm
    from numba import types

    def load(path: str | None) -> bool:
        if not path:
            return False
        try:
            llvm.load_library_permanently(path)
        except RuntimeError:
            return False
        return True

    if load(_isal_library()):  # crc32_gzip_refl(0, p, n) equals zlib's crc32(0, p, n)
        _NATIVE_CRC32 = types.ExternalFunction("crc32_gzip_refl", types.uint32(types.uint32, types.voidptr,
                                                                                  types.uint64))
        _NATIVE_FROM = 8  # shorter inputs are faster in the inline loop (ISA-L: measured)
    elif load(ctypes.util.find_library("z")):
        _NATIVE_CRC32 = types.ExternalFunction("crc32", types.uint64(types.uint64, types.voidptr, types.uint32))
        _NATIVE_FROM = 512
    else:  # pragma: no cover - every CPython build ships libz
        return crc32_sliced
    return _crc32_native


def _isal_library() -> str | None:
    """ISA-L's CRC-32 (SIMD, ~15 GB/s here) as exported by python-isal's zlib module, if installed."""
    try:
        import isal.isal_zlib as isal_zlib
    except ImportError:
        return None
    return isal_zlib.__file__


@jitable(inline=True, compiled=_crc32_compiled)
def crc32(buf, start, length, tables):
    """zlib CRC-32 of buf[start:start+length] (unmasked); compiled: zlib's or ISA-L's own past a few bytes."""
    return np.int64(zlib.crc32(buf[start : start + length]))


_MEMCPY = None  # libc's memcpy, as numba calls it: set by `_copy_bytes_compiled`


def _copy_bytes_native(dst, at, src, start, length):
    if length <= 0:
        return
    if at < 0 or start < 0 or at + length > dst.shape[0] or start + length > src.shape[0]:
        raise IndexError("copy_bytes: range outside the array")
    _MEMCPY(dst.ctypes.data + at, src.ctypes.data + start, length)


def _copy_bytes_compiled():
    """The compiled `copy_bytes`: libc's memcpy (numba's slice copy moves a byte at a time, about 1 GB/s here,
    a third of memcpy)."""
    global _MEMCPY
    from numba import types

    _MEMCPY = types.ExternalFunction("memcpy", types.voidptr(types.voidptr, types.voidptr, types.uintp))
    return _copy_bytes_native


@jitable(inline=True, compiled=_copy_bytes_compiled)
def copy_bytes(dst, at, src, start, length):
    """dst[at:at+length] = src[start:start+length]; both ranges are checked, and must not overlap."""
    if length <= 0:
        return
    if at < 0 or start < 0 or at + length > dst.shape[0] or start + length > src.shape[0]:
        raise IndexError("copy_bytes: range outside the array")
    dst[at : at + length] = src[start : start + length]
