"""Damage a copy of a store in one known way (after LevelDB's corruption_test `Corrupt`): the one fixture
every corruption test, in every folder, damages stores with."""

from __future__ import annotations

from pathlib import Path


def corrupt(root: Path, rel: str | Path, damage: str, at: int = 0, nbytes: int = 0) -> Path:
    """Damage one file of the store copy: flip (one bit at `at`), zero (`nbytes` from `at`), truncate
    (to `at` bytes), delete, or garbage (`nbytes` of non-zero junk at `at`)."""
    path = root / rel
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[at] ^= 0x10
    elif damage == "zero":
        data[at : at + nbytes] = bytes(nbytes)
    elif damage == "truncate":
        del data[at:]
    elif damage == "garbage":
        data[at : at + nbytes] = (b"\x5a\xa5junk" * nbytes)[:nbytes]
    if damage == "delete":
        path.unlink()
    else:
        path.write_bytes(bytes(data))
    return path
