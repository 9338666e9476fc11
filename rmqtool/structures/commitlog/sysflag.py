"""The sysFlag bit field of a commitlog record (MessageSysFlag)."""

from __future__ import annotations

COMPRESSED = 0x1
MULTI_TAGS = 0x2
TRANSACTION_MASK = 0xC
TRANSACTION_NOT = 0x0
TRANSACTION_PREPARED = 0x4
TRANSACTION_COMMIT = 0x8
TRANSACTION_ROLLBACK = 0xC
BORN_HOST_V6 = 0x10
STORE_HOST_V6 = 0x20
NEED_UNWRAP = 0x40
INNER_BATCH = 0x80
COMPRESSION_TYPE_MASK = 0x700  # 5.x and 4.9.4+: the codec of a COMPRESSED body
COMPRESSION_TYPE_SHIFT = 8
COMPRESSION_LZ4 = 0x100
COMPRESSION_ZSTD = 0x200
COMPRESSION_ZLIB = 0x300  # older 4.x producers set COMPRESSED alone, which means zlib too

TRANSACTION_NAMES = {
    TRANSACTION_NOT: "not",
    TRANSACTION_PREPARED: "prepared",
    TRANSACTION_COMMIT: "commit",
    TRANSACTION_ROLLBACK: "rollback",
}
COMPRESSION_NAMES = {0: "zlib", 1: "lz4", 2: "zstd", 3: "zlib"}
UNKNOWN_COMPRESSION = "unknown"  # codec values 4..7: no client writes them


def transaction_type(sys_flag: int) -> int:
    return sys_flag & TRANSACTION_MASK


def enters_consume_queue(sys_flag):
    """Plain and committed records take a queue offset and are dispatched; prepared and rolled-back
    ones are not. Takes an int or a numpy array (and compiles into kernels)."""
    tx = sys_flag & TRANSACTION_MASK
    return (tx == TRANSACTION_NOT) | (tx == TRANSACTION_COMMIT)


def with_transaction_type(sys_flag: int, tx_type: int) -> int:
    return (sys_flag & ~TRANSACTION_MASK) | tx_type


def transaction_name(sys_flag: int) -> str:
    return TRANSACTION_NAMES[transaction_type(sys_flag)]


def is_compressed(sys_flag: int) -> bool:
    return bool(sys_flag & COMPRESSED)


def compression_type(sys_flag: int) -> int:
    """0 (legacy zlib), 1 lz4, 2 zstd, 3 zlib."""
    return (sys_flag & COMPRESSION_TYPE_MASK) >> COMPRESSION_TYPE_SHIFT


def compression_name(sys_flag: int) -> str | None:
    """The codec of a COMPRESSED body (zlib, lz4, zstd or unknown); None for a plain body."""
    if not is_compressed(sys_flag):
        return None
    return COMPRESSION_NAMES.get(compression_type(sys_flag), UNKNOWN_COMPRESSION)


def without_compression(sys_flag: int) -> int:
    """`sys_flag` of the same record holding its body plain (COMPRESSED and codec bits cleared)."""
    return sys_flag & ~(COMPRESSED | COMPRESSION_TYPE_MASK)


def is_multi_tags(sys_flag: int) -> bool:
    return bool(sys_flag & MULTI_TAGS)


def is_inner_batch(sys_flag: int) -> bool:
    return bool(sys_flag & INNER_BATCH)


def with_host_bits(sys_flag: int, born_v6: bool, store_v6: bool) -> int:
    """`sys_flag` with its host bits saying which hosts are IPv6 (the store sets them so)."""
    flags = sys_flag & ~(BORN_HOST_V6 | STORE_HOST_V6)
    if born_v6:
        flags |= BORN_HOST_V6
    if store_v6:
        flags |= STORE_HOST_V6
    return flags


def born_host_v6(sys_flag: int) -> bool:
    return bool(sys_flag & BORN_HOST_V6)


def store_host_v6(sys_flag: int) -> bool:
    return bool(sys_flag & STORE_HOST_V6)


def describe(sys_flag: int) -> list[str]:
    """Human-readable names of the bits set in `sys_flag`."""
    names = []
    if is_compressed(sys_flag):
        names.append(f"compressed({compression_name(sys_flag)})")
    if is_multi_tags(sys_flag):
        names.append("multi-tags")
    if transaction_type(sys_flag):
        names.append(f"transaction-{transaction_name(sys_flag)}")
    if born_host_v6(sys_flag):
        names.append("bornHost-v6")
    if store_host_v6(sys_flag):
        names.append("storeHost-v6")
    if sys_flag & NEED_UNWRAP:
        names.append("need-unwrap")
    if is_inner_batch(sys_flag):
        names.append("inner-batch")
    return names
