"""Compressed message bodies: which codec sysFlag names, compressing as a producer does, and
decompressing untrusted bodies with failure as data.

A body is compressed when sysFlag has COMPRESSED; bits 8-10 name the codec (1 LZ4 frame,
2 ZSTD, 3 ZLIB) and a COMPRESSED flag without codec bits is zlib, as producers before 4.9.4
wrote it. A producer (4.9.4+ and 5.x) compresses at level 5 and sets COMPRESSED plus the
codec bits, zlib included. lz4 and zstandard are imported only when such a body is met.
"""

from __future__ import annotations

import zlib
from typing import NamedTuple

from rmqtool.errors import RmqError
from rmqtool.structures.commitlog import sysflag

CODECS = ("zlib", "lz4", "zstd")
CODEC_BITS = {"zlib": sysflag.COMPRESSION_ZLIB, "lz4": sysflag.COMPRESSION_LZ4, "zstd": sysflag.COMPRESSION_ZSTD}
PRODUCER_LEVEL = 5  # DefaultMQProducer's compressLevel (lz4 frames ignore it)
MAX_PLAIN_LEN = 64 << 20  # a body that inflates beyond this is reported, not held in memory
NOT_DECOMPRESSIBLE = "body-not-decompressible"  # the finding kind of a compressed body that does not inflate
_ZSTD_FEED = 1024  # zstd input handed over per call, so one call cannot inflate far past the limit


class Decompressed(NamedTuple):
    """A body as a consumer gets it; on failure `body` is None and `error` says why."""

    body: bytes | None
    error: str | None = None


class _Failure(Exception):
    """Why a body does not decompress (turned into Decompressed.error in this module)."""


def codec_of(sys_flag: int) -> str | None:
    """zlib, lz4, zstd (or unknown) for a COMPRESSED body; None for a plain one."""
    return sysflag.compression_name(sys_flag)


def compress(body: bytes, codec: str, level: int = PRODUCER_LEVEL) -> tuple[bytes, int]:
    """(stored body, sysFlag bits to set) as a 5.x producer compresses a body with `codec`.

    lz4 is one frame of independent 4 MiB blocks without checksums or content size, zstd one
    frame without content size, zlib a zlib stream: what the Java client's streams write.
    """
    if codec == "zlib":
        data = zlib.compress(body, level)
    elif codec == "lz4":
        import lz4.frame

        frame = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX4MB, block_linked=False,
                                             content_checksum=False)
        data = frame.begin() + frame.compress(body) + frame.flush()
    elif codec == "zstd":
        import zstandard

        data = zstandard.ZstdCompressor(level=level, write_content_size=False).compress(body)
    else:
        raise RmqError(f"unknown compression {codec!r}: use {', '.join(CODECS)}")
    return data, sysflag.COMPRESSED | CODEC_BITS[codec]


def decompress(body: bytes, codec: str | None, limit: int = MAX_PLAIN_LEN) -> Decompressed:
    """`body` decompressed with `codec` (None: it is plain); never raises on bad bytes."""
    if codec is None:
        return Decompressed(body)
    inflate = _INFLATERS.get(codec)
    if inflate is None:
        return Decompressed(None, f"unknown compression {codec!r}")
    try:
        return Decompressed(inflate(body, limit))
    except Exception as e:  # the decoders raise several types on untrusted bytes, _Failure among them
        return Decompressed(None, f"{codec} body does not decompress: {e}")


def plain_body(body: bytes, sys_flag: int) -> Decompressed:
    """The body a consumer of this record gets."""
    codec = codec_of(sys_flag)
    if codec == sysflag.UNKNOWN_COMPRESSION:
        return Decompressed(None, f"unknown compression type {sysflag.compression_type(sys_flag)} in sysFlag")
    return decompress(body, codec)


def _too_large(limit: int) -> _Failure:
    return _Failure(f"it inflates beyond {limit} bytes")


def _zlib(data: bytes, limit: int) -> bytes:
    """One zlib stream; bytes after its end are ignored, as Java's InflaterInputStream does."""
    stream = zlib.decompressobj()
    out = stream.decompress(data, limit + 1)
    if len(out) > limit:
        raise _too_large(limit)
    if not stream.eof:
        raise _Failure("the zlib stream is truncated")
    return out


def _lz4(data: bytes, limit: int) -> bytes:
    """LZ4 frames back to back until the input ends."""
    import lz4.frame

    out = bytearray()
    rest = data
    while rest:
        frame = lz4.frame.LZ4FrameDecompressor()
        out += frame.decompress(rest, max_length=limit + 1 - len(out))
        if len(out) > limit:
            raise _too_large(limit)
        if not frame.eof:
            raise _Failure("the lz4 frame is truncated")
        rest = frame.unused_data
    return bytes(out)


def _zstd(data: bytes, limit: int) -> bytes:
    """ZSTD frames back to back until the input ends, fed in small pieces to bound the output."""
    import zstandard

    decompressor = zstandard.ZstdDecompressor()
    out = bytearray()
    rest = memoryview(data)
    while rest:
        frame = decompressor.decompressobj()
        fed = 0
        while not frame.eof:
            if fed >= len(rest):
                raise _Failure("the zstd frame is truncated")
            piece = rest[fed : fed + _ZSTD_FEED]
            fed += len(piece)
            out += frame.decompress(piece)
            if len(out) > limit:
                raise _too_large(limit)
        rest = rest[fed - len(frame.unused_data) :]
    return bytes(out)


_INFLATERS = {"zlib": _zlib, "lz4": _lz4, "zstd": _zstd}
