"""Fixed-size layouts: one list of big-endian fields from which every offset, the length, the
struct codec and the numpy dtype of a structure are derived.

A structure module (`message`, `consumequeue`, `index`, `checkpoint`, `batch`) declares its
fields once as a `Layout`; kernels and readers take offsets from it by name, so no offset is
written twice. numpy is imported only when a dtype is asked for (the CLI starts without it).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

JAVA_LONG_MIN, JAVA_LONG_MAX = -(1 << 63), (1 << 63) - 1  # the range of a ">i8" field: offsets, times, counts

if TYPE_CHECKING:
    import numpy as np

# numpy type of a field -> struct code; "V<n>" is n raw bytes (a host address)
_STRUCT_CODES = {">i1": "b", ">i2": "h", ">i4": "i", ">i8": "q"}


def _width(kind: str) -> int:
    return int(kind[1:]) if kind.startswith("V") else struct.calcsize(">" + _STRUCT_CODES[kind])


def _code(kind: str) -> str:
    return f"{kind[1:]}s" if kind.startswith("V") else _STRUCT_CODES[kind]


@dataclass(frozen=True)
class Layout:
    """Named big-endian fields laid out back to back."""

    fields: tuple[tuple[str, str], ...]
    offsets: dict[str, int] = field(init=False, repr=False, compare=False)
    size: int = field(init=False, repr=False, compare=False)
    codec: struct.Struct = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        offsets, at = {}, 0
        for name, kind in self.fields:
            offsets[name] = at
            at += _width(kind)
        object.__setattr__(self, "offsets", offsets)
        object.__setattr__(self, "size", at)
        object.__setattr__(self, "codec", struct.Struct(">" + "".join(_code(k) for _, k in self.fields)))

    @classmethod
    def of(cls, *fields: tuple[str, str]) -> Layout:
        return cls(tuple(fields))

    def offset(self, name: str) -> int:
        return self.offsets[name]

    def width(self, name: str) -> int:
        return _width(dict(self.fields)[name])

    def bounds(self, name: str) -> tuple[int, int]:
        """The least and greatest value of integer field `name` (signed, as Java's int and long)."""
        bits = 8 * self.width(name)
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.fields)

    def dtype(self) -> np.dtype:
        import numpy as np

        return np.dtype(list(self.fields))
