"""What mends the checkpoint's findings: its times written again from the files (no later than the newest
record), as a clean shutdown leaves them."""

from __future__ import annotations

from rmqtool.report import CHECKPOINT, Finding
from rmqtool.structures.structure import RESET_CHECKPOINT, Repair


def repairs(findings: list[Finding], path: str) -> list[Repair]:
    own = [f for f in findings if f.structure == CHECKPOINT]
    if not own:
        return []
    kinds = tuple(sorted({f.kind for f in own}))
    return [Repair(CHECKPOINT, RESET_CHECKPOINT, path, "write the checkpoint's times again from the newest record",
                   kinds)]
