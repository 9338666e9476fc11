"""The offset message id: hex of store host address + port + physical offset."""

from __future__ import annotations

import struct

from rmqtool.errors import RmqError
from rmqtool.format.hosts import IPV4_LEN, IPV6_LEN, SocketAddress

_PORT_OFFSET = struct.Struct(">iq")
IPV4_MSGID_LEN = 2 * (IPV4_LEN + _PORT_OFFSET.size)
IPV6_MSGID_LEN = 2 * (IPV6_LEN + _PORT_OFFSET.size)


def create(store_host: SocketAddress, physical_offset: int) -> str:
    return (store_host.address + _PORT_OFFSET.pack(store_host.port, physical_offset)).hex().upper()


def decode(msg_id: str) -> tuple[SocketAddress, int]:
    """(store host, physical offset) of an offset msgId; RmqError when it is not one."""
    text = msg_id.strip()
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
