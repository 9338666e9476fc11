"""`rmqtool report`: the store's picture rendered as one HTML page, written whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

from rmqtool.engine.opening import not_a_store
from rmqtool.errors import RmqError
from rmqtool.io.atomic import atomic_output
from rmqtool.ops.picture import store_picture
from rmqtool.page.document import render

SUFFIX = "-report.html"


def default_out(store: str | os.PathLike) -> Path:
    """`./<store folder's name>-report.html`, in the working folder."""
    return Path(f"{Path(store).resolve().name or 'store'}{SUFFIX}")


def write_report(path: str | os.PathLike, out: str | os.PathLike, config: str | os.PathLike | None = None, *,
                 verify: bool = False, progress=None) -> dict:
    """Build the picture of the store at `path` (`ops.picture.store_picture`; with `verify`, a full scan
    for findings), render it and write it to `out` (replacing a file there; a folder is refused before
    the store is read). Returns what was written: the page's path and size, and what it shows."""
    root, target = Path(path), Path(out)
    if not root.exists():
        raise not_a_store(root)
    if target.is_dir():
        raise RmqError(f"{target} is a folder: name a file to write")
    if not target.parent.is_dir():
        raise RmqError(f"cannot write {target}: no folder {target.parent}")

    picture = store_picture(root, config, verify=verify, progress=progress)
    data = render(picture).encode("utf-8")
    with atomic_output(target, force=True, what="report") as tmp:
        tmp.write_bytes(data)
    found = picture.get("findings")
    return {"store": str(root), "out": str(target), "bytes": len(data), "verified": found is not None,
            "problems": None if found is None else found["problems"],
            "buckets": len((picture.get("timeline") or {}).get("messages") or []),
            "topics": len((picture.get("timeline") or {}).get("topics") or []),
            "segments": len(picture.get("segments") or [])}
