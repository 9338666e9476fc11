"""`diff A B`: two replicas of a store (a master and its slave, or two copies) compared, read-only.

Both stores are opened and what each log holds measured ([its first segment's start, the end of its
records), `log_extent`); then every registered structure is asked: first whether the two can be compared
by its files at all (`pair_refusal`: the commitlog refuses different segment geometries), then to compare
them (`compare`: its sections of the document, and whether the sides agree). Each structure's rule lives
in its folder (`structures/<name>/compare.py`); here they are only asked and their answers assembled, in
the registry's order, into one document: equal when every structure agrees.

The structures are compared two at a time (numpy and the page faults of the maps run without the GIL):
on two cores the queues and the index cost about what the log does.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from rmqtool.engine.reader import open_root_reader
from rmqtool.errors import RmqError
from rmqtool.ops.hashing import log_extent
from rmqtool.structures.registry import REGISTRY
from rmqtool.structures.replicas import Comparison, Pair

AT_ONCE = 2  # structures compared at the same time


def diff_stores(path_a: str | os.PathLike, path_b: str | os.PathLike, config_a: str | os.PathLike | None = None,
                config_b: str | os.PathLike | None = None) -> dict:
    """The JSON document of `diff` (see docs/json-schema.md)."""
    a, b = open_root_reader(path_a, config_a), open_root_reader(path_b, config_b)
    try:
        for structure in REGISTRY:
            refusal = structure.pair_refusal(a, b)
            if refusal is not None:
                raise RmqError(refusal)
        pair = Pair(a, b, log_extent(a), log_extent(b))
        with ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
            asked = [pool.submit(structure.compare, pair) for structure in REGISTRY]
            answers: list[Comparison] = [c for c in (f.result() for f in asked) if c is not None]
        doc: dict = {side: {"store": str(view.paths.root), "from": held.start, "upto": held.end}
                     for side, view, held in pair.sides()}
        for answer in answers:
            doc.update(answer.sections)
        doc["identical"] = all(answer.agree for answer in answers)
        return doc
    finally:
        a.queues.close()
        b.queues.close()
