"""A config file as the broker keeps it: `FILE`, `FILE.bak` (the text before the last write) and
`FILE.tmp` (a write whose rename did not happen).

The broker's load rule (`ConfigManager.load`): `FILE` when it holds text that parses, else
`FILE.bak`; an absent pair is an empty table. Its write rule (`persist`): the new text to `FILE.tmp`,
the old text copied to `FILE.bak`, then the rename. `save` does the same, with an fsync at each step
and an atomic rename (the broker deletes `FILE` before renaming, so a crash between the two leaves
only `.bak` and `.tmp`, which the load rule covers).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.files.lock import fsync_path
from rmqtool.structures.config import fastjson

BAK, TMP = ".bak", ".tmp"


def sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def read_text(path: Path) -> str | None:
    """The file's text; None when it does not exist."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise RmqError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None


@dataclass
class Loaded:
    """What the broker would load from `path`: the document, and the file it came from (None: neither
    the file nor its `.bak` holds one, so the table starts empty)."""

    path: Path
    doc: object
    source: Path | None
    error: str | None = None  # why the file itself was passed over for its .bak


def parse(path: Path, text: str) -> object:
    try:
        return fastjson.loads(text)
    except ValueError as e:
        raise RmqError(f"{path}: not a config document ({e})") from None


def load(path: Path) -> Loaded:
    """The document the broker loads from `path` (its `.bak` when the file is empty or does not parse)."""
    text, error = read_text(path), None
    if text:
        try:
            return Loaded(path, parse(path, text), path)
        except RmqError as e:
            error = str(e)
    bak = sibling(path, BAK)
    bak_text = read_text(bak)
    if bak_text:
        return Loaded(path, parse(bak, bak_text), bak, error)
    if error is not None:
        raise RmqError(error)
    return Loaded(path, {}, None)


def save(path: Path, doc: object, *, keep_bak: bool = False) -> None:
    """Write `doc` to `path` the way the broker persists it: `.tmp`, the old text to `.bak`, rename.

    `keep_bak`: the document was loaded from the `.bak` (the file is empty or broken); the `.bak` keeps its
    text, so a write stopped before the rename still loads the table it read (the broker would copy the
    broken file over it, and a kill then would leave no loadable table)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = sibling(path, TMP)
    try:
        tmp.write_text(fastjson.dumps(doc), encoding="utf-8")
        fsync_path(tmp)
        if path.exists() and not keep_bak:
            bak = sibling(path, BAK)
            bak.write_bytes(path.read_bytes())
            fsync_path(bak)
        os.replace(tmp, path)
        fsync_path(path.parent)
    except OSError as e:
        raise RmqError(f"cannot write {path}: {e.strerror}") from None


Snapshot = dict[str, bytes | None] | None  # FILE, FILE.bak, FILE.tmp by name (None: absent); None: no folder


def snapshot(path: Path) -> Snapshot:
    """The bytes of `path`'s trio as they are, for `restore` to put back after a write that is taken back."""
    if not path.parent.is_dir():
        return None
    out: dict[str, bytes | None] = {}
    for p in (path, sibling(path, BAK), sibling(path, TMP)):
        try:
            out[p.name] = p.read_bytes()
        except FileNotFoundError:
            out[p.name] = None
    return out


def restore(path: Path, snap: Snapshot) -> None:
    """Put `path`'s trio back as `snapshot` found it, byte for byte and durably (a folder it lacked removed
    again when nothing else is in it)."""
    for p in (path, sibling(path, BAK), sibling(path, TMP)):
        data = snap.get(p.name) if snap is not None else None
        if data is None:
            p.unlink(missing_ok=True)
            continue
        if p.is_file() and p.read_bytes() == data:
            continue
        tmp = sibling(p, ".restore")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    if not path.parent.is_dir():
        return
    if snap is None and not any(path.parent.iterdir()):
        path.parent.rmdir()
        fsync_path(path.parent.parent)
    else:
        fsync_path(path.parent)
