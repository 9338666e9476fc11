"""The 5.x timer log of a store, each unit with the record it points at (`decode timerlog`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from rmqtool.engine.reader import open_reader
from rmqtool.engine.recognition import require_store_root
from rmqtool.ops.query import StoreQuery
from rmqtool.report import Finding
from rmqtool.structures.timerlog.reader import timer_log_dir, timer_units


def timer_log(root: str | os.PathLike, config: str | os.PathLike | None = None,
              resolve: bool = True) -> Iterator[dict | Finding]:
    """The store's timer units in log order and the findings among them; with `resolve`, each unit's
    target record is read through a read-only query of the store (opened here, closed at the end)."""
    require_store_root(Path(root), "decode timerlog")
    directory = timer_log_dir(root)
    query = StoreQuery(open_reader(root, config)) if resolve else None
    try:
        yield from timer_units(directory, query)
    finally:
        if query is not None:
            query.close()
