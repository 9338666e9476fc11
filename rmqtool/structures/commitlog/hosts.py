"""Born/store host addresses: IPv4 (4 bytes) or IPv6 (16 bytes) followed by a 4-byte port."""

from __future__ import annotations

import ipaddress
import struct
from functools import lru_cache
from typing import NamedTuple

from rmqtool.errors import RmqError

IPV4_LEN = 4
IPV6_LEN = 16
PORT_LEN = 4
MAX_PORT = 0xFFFF  # stored as an int, but a Java InetSocketAddress holds 0..65535

_PORT = struct.Struct(">i")


def address_len(v6: bool) -> int:
    """Bytes of a host address: 16 for IPv6, 4 for IPv4 (as a sysFlag host bit says)."""
    return IPV6_LEN if v6 else IPV4_LEN


def host_len(v6: bool) -> int:
    """Bytes of a stored host: its address and the port after it."""
    return address_len(v6) + PORT_LEN


class SocketAddress(NamedTuple):
    """An address as the store keeps it: the raw address bytes and the port."""

    address: bytes
    port: int

    @property
    def is_v6(self) -> bool:
        return len(self.address) == IPV6_LEN

    @property
    def ip(self) -> str:
        return _ip_text(self.address)

    def encoded_len(self) -> int:
        return len(self.address) + PORT_LEN

    def encode(self) -> bytes:
        return self.address + _PORT.pack(self.port)

    def __str__(self) -> str:
        return _host_text(self.address, self.port)


@lru_cache(maxsize=4096)
def _ip_text(address: bytes) -> str:
    return str(ipaddress.ip_address(address))


@lru_cache(maxsize=4096)
def _host_text(address: bytes, port: int) -> str:
    ip = _ip_text(address)
    return f"[{ip}]:{port}" if len(address) == IPV6_LEN else f"{ip}:{port}"


@lru_cache(maxsize=4096)
def parse_host(text: str) -> SocketAddress:
    """Parse `ip:port` or `[v6]:port` (a leading `/`, as Java prints addresses, is accepted)."""
    raw = text.strip().lstrip("/")
    addr, sep, port = raw.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()):
        raise RmqError(f"bad host {text!r}: expected ip:port or [ipv6]:port")
    addr = addr.strip("[]")
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        raise RmqError(f"bad host {text!r}: {addr!r} is not an IP address") from None
    port_value = int(port)
    if port_value > MAX_PORT:
        raise RmqError(f"bad host {text!r}: port out of range [0, {MAX_PORT}]")
    return SocketAddress(ip.packed, port_value)
