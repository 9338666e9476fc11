"""What a scan of the log yields (`StoreView.scan`): good records of a stretch, and the findings met on the way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rmqtool.report import Finding

if TYPE_CHECKING:  # start-up: numpy and the scanner load on the first scan, not with the reader
    from rmqtool.structures.commitlog.scan import RecordBatch


@dataclass
class ScanChunk:
    """Good records of one stretch of the log and the findings met on the way."""

    batch: RecordBatch | None
    findings: list[Finding] = field(default_factory=list)
