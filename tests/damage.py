"""Damage a copy of a store in one known way (after LevelDB's corruption_test `Corrupt`): the one fixture
every corruption test, in every folder, damages stores with."""

from __future__ import annotations

import shutil
from pathlib import Path


def corrupt(root: Path, rel: str | Path, damage: str, at: int = 0, nbytes: int = 0, data: bytes = b"") -> Path:
    """Damage one file of the store copy: flip (one bit at `at`), zero (`nbytes` from `at`), truncate
    (to `at` bytes), delete, garbage (`nbytes` of non-zero junk at `at`), or write (`data` over the bytes at
    `at`: a field given a value no writer gives it)."""
    path = root / rel
    content = bytearray(path.read_bytes())
    if damage == "flip":
        content[at] ^= 0x10
    elif damage == "zero":
        content[at : at + nbytes] = bytes(nbytes)
    elif damage == "truncate":
        del content[at:]
    elif damage == "garbage":
        content[at : at + nbytes] = (b"\x5a\xa5junk" * nbytes)[:nbytes]
    elif damage == "write":
        content[at : at + len(data)] = data
    if damage == "delete":
        path.unlink()
    else:
        path.write_bytes(bytes(content))
    return path


SEG = 65536  # the fixture store's segment size: three segments, 0, 65536 and 131072
FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "store"
_QUEUE = f"consumequeue/OrderTopic/0/{0:020d}"


def _zero_file(root: Path, rel: str) -> None:
    path = root / rel
    path.write_bytes(bytes(path.stat().st_size))


def _remove_tree(root: Path, rel: str) -> None:
    shutil.rmtree(root / rel)


def _remove_files(root: Path, rel: str) -> None:
    for p in (root / rel).iterdir():
        p.unlink()


# name -> the damage done to a copy of the fixture store, as an operator meets it
KNOWN_DAMAGE = {
    "no-queue-folder": lambda r: _remove_tree(r, "consumequeue/OrderTopic/0"),
    "queue-tail-zeroed": lambda r: corrupt(r, _QUEUE, "zero", 400, 260),
    "queue-truncated": lambda r: corrupt(r, _QUEUE, "truncate", 300),
    "index-deleted": lambda r: _remove_files(r, "index"),
    "crc-mid": lambda r: corrupt(r, f"commitlog/{SEG:020d}", "flip", 5300),
    "last-zeroed": lambda r: _zero_file(r, f"commitlog/{2 * SEG:020d}"),
    "torn-tail": lambda r: corrupt(r, f"commitlog/{2 * SEG:020d}", "garbage", 3000, 200),
    "middle-missing": lambda r: corrupt(r, f"commitlog/{SEG:020d}", "delete"),
    "checkpoint-deleted": lambda r: corrupt(r, "checkpoint", "delete"),
}


def damaged_stores(tmp_path: Path, names: list[str]) -> dict[str, Path]:
    """A copy of the fixture store per name of KNOWN_DAMAGE, damaged that way."""
    out = {}
    for name in names:
        root = tmp_path / name
        shutil.copytree(FIXTURE, root)
        for p in root.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        KNOWN_DAMAGE[name](root)
        out[name] = root
    return out


def restored_from_lost(root: Path, wanted: dict[str, bytes]) -> dict[str, bytes]:
    """The files named in `wanted` (paths relative to `root`) as lost/ gives them back: each repair's folder,
    newest first, writes its kept ranges (`path@offset`) back at their offsets and its kept files back whole,
    over the store as it is now."""
    out = {rel: (root / rel).read_bytes() if (root / rel).is_file() else b"" for rel in wanted}
    folders = sorted((root / "lost").iterdir(), key=lambda p: (p.name.split("-")[0], int(p.name.split("-")[1])
                                                              if "-" in p.name else 1), reverse=True)
    for folder in folders:
        for kept in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = str(kept.relative_to(folder))
            name, _, at = rel.rpartition("@")
            if at.isdigit() and name in out:
                data = bytearray(out[name])
                start = int(at)
                piece = kept.read_bytes()
                data[start : start + len(piece)] = piece
                out[name] = bytes(data)
            elif rel in out:
                out[rel] = kept.read_bytes()
    return out
