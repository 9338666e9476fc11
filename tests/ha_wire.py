"""The golden HA captures (../shared/golden/ha): their wire streams, starting stores, and a scripted peer."""

from __future__ import annotations

import json
import shutil
import socket
import struct
from pathlib import Path

SEGMENT = 65536


def wire(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "wire.jsonl").read_text().splitlines()]


def stream(rows: list[dict], conn: int, direction: str) -> bytes:
    """One direction of one connection, as its bytes went."""
    return b"".join(bytes.fromhex(r["hex"]) for r in rows if r["conn"] == conn and r["dir"] == direction)


def frames(data: bytes) -> list[tuple[int, int]]:
    """(offset, size) of every frame of a master's stream."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        offset, size = struct.unpack_from(">qi", data, pos)
        out.append((offset, size))
        pos += 12 + size
    assert pos == len(data), "the stream ends inside a frame"
    return out


def reports(data: bytes) -> list[int]:
    return [struct.unpack_from(">q", data, p)[0] for p in range(0, len(data), 8)]


def cut_commitlog(src: Path, dst: Path, at: int) -> None:
    """The README's "cut at X": files that start at or after `at` dropped, bytes from `at` zeroed."""
    dst.mkdir(parents=True)
    for f in sorted(src.iterdir()):
        start = int(f.name)
        if start >= at:
            continue
        shutil.copyfile(f, dst / f.name)
        if at < start + SEGMENT:
            with open(dst / f.name, "r+b") as out:
                out.seek(at - start)
                out.write(bytes(start + SEGMENT - at))


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def read_frame(sock: socket.socket) -> tuple[int, bytes]:
    offset, size = struct.unpack(">qi", recv_exact(sock, 12))
    return offset, recv_exact(sock, size) if size else b""
