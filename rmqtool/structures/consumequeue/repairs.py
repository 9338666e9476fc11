"""What mends the consume queues' findings: every queue dispatched again from the log (the broker's reput
rule), which also drops entries past the log's end and files of a wrong size or name."""

from __future__ import annotations

from rmqtool.report import CONSUMEQUEUE, Finding
from rmqtool.structures.structure import REBUILD_QUEUES, Repair


def repairs(findings: list[Finding], folder: str) -> list[Repair]:
    own = [f for f in findings if f.structure == CONSUMEQUEUE]
    if not own:
        return []
    kinds = tuple(sorted({f.kind for f in own}))
    return [Repair(CONSUMEQUEUE, REBUILD_QUEUES, folder, "dispatch every consume queue again from the log", kinds)]
