"""The corruption report every decoder emits instead of raising mid-file."""

from __future__ import annotations

from dataclasses import asdict, dataclass

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    """Something wrong at `offset` of `file`, covering `bytes` bytes."""

    file: str
    offset: int
    reason: str
    bytes: int
    severity: str = ERROR

    def to_json(self) -> dict:
        return asdict(self)
