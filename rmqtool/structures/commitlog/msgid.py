"""The offset message id: hex of store host address + port + physical offset."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from rmqtool.errors import RmqError
from rmqtool.structures.commitlog import uniqkey
from rmqtool.structures.commitlog.hosts import IPV4_LEN, IPV6_LEN, MAX_PORT, SocketAddress

if TYPE_CHECKING:
    import numpy as np

_PORT_OFFSET = struct.Struct(">iq")
IPV4_MSGID_LEN = 2 * (IPV4_LEN + _PORT_OFFSET.size)
IPV6_MSGID_LEN = 2 * (IPV6_LEN + _PORT_OFFSET.size)


def create(store_host: SocketAddress, physical_offset: int) -> str:
    return (store_host.address + _PORT_OFFSET.pack(store_host.port, physical_offset)).hex().upper()


def create_many(store_hosts: np.ndarray, physical_offsets: np.ndarray) -> np.ndarray:
    """Offset msgIds of many IPv4 records: (n, 32) ASCII bytes from (n, 8) address + port bytes."""
    import numpy as np

    n = len(physical_offsets)
    raw = np.empty((n, IPV4_LEN + _PORT_OFFSET.size), dtype=np.uint8)
    raw[:, : store_hosts.shape[1]] = store_hosts
    raw[:, store_hosts.shape[1] :] = physical_offsets.astype(">i8").view(np.uint8).reshape(n, 8)
    digits = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
    out = np.empty((n, 2 * raw.shape[1]), dtype=np.uint8)
    out[:, 0::2] = digits[raw >> 4]
    out[:, 1::2] = digits[raw & 15]
    return out


def refuse_spaces(msg_id: str) -> str:
    """`msg_id` unchanged; RmqError (bad input) when it holds a space anywhere, around or inside: a msgId is hex
    digits alone, and one pasted with spaces is a different string to every lookup."""
    if any(c.isspace() for c in msg_id):
        raise RmqError(f"bad msgId {msg_id!r}: a msgId is {IPV4_MSGID_LEN} (IPv4) or {IPV6_MSGID_LEN} (IPv6) hex "
                       "digits without spaces")
    return msg_id


def decode(msg_id: str) -> tuple[SocketAddress, int]:
    """(store host, physical offset) of an offset msgId; RmqError when it is not one (spaces included)."""
    text = refuse_spaces(msg_id)
    if len(text) not in (IPV4_MSGID_LEN, IPV6_MSGID_LEN):
        raise RmqError(
            f"bad msgId {msg_id!r}: expected {IPV4_MSGID_LEN} (IPv4) or {IPV6_MSGID_LEN} (IPv6) hex characters,"
            f" got {len(text)}"
        )
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raise RmqError(f"bad msgId {msg_id!r}: not hexadecimal") from None
    addr_len = len(raw) - _PORT_OFFSET.size
    port, offset = _PORT_OFFSET.unpack_from(raw, addr_len)
    if offset < 0:
        raise RmqError(f"bad msgId {msg_id!r}: negative physical offset {offset}")
    return SocketAddress(raw[:addr_len], port), offset


def describe(msg_id: str) -> dict:
    """What a msgId says: an offset msgId's broker and offset (`kind` "offset"), or, for 32 hex digits that
    cannot be one (a port past 65535, a negative offset), the fields of the client msgId (UNIQ_KEY) it is;
    RmqError otherwise (a space anywhere too)."""
    refuse_spaces(msg_id)
    try:
        host, offset = decode(msg_id)
        if not 0 <= host.port <= MAX_PORT:
            raise RmqError(f"bad msgId {msg_id!r}: port {host.port} is not a port")
    except RmqError:
        client = uniqkey.decode(msg_id)
        if client is None:
            raise
        return client
    return {"msgId": msg_id.upper(), "kind": "offset", "address": host.ip, "port": host.port,
            "storeHost": str(host), "commitLogOffset": offset}
