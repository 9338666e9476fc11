"""What mends the index's findings: the index dispatched again from the log (every key of every record,
in new files), which also drops stale entries and files an interrupted write left."""

from __future__ import annotations

from rmqtool.report import INDEX, Finding
from rmqtool.structures.structure import REBUILD_INDEX, Repair


def repairs(findings: list[Finding], folder: str) -> list[Repair]:
    own = [f for f in findings if f.structure == INDEX]
    if not own:
        return []
    kinds = tuple(sorted({f.kind for f in own}))
    return [Repair(INDEX, REBUILD_INDEX, folder, "dispatch the index again from the log", kinds)]
