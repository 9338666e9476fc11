"""What comparing two replicas of a store (`diff`) hands each structure, and what each answers.

A `Pair` is the two stores being read (each a `view`, as every structure is handed one: the engine's
store reader, taken by what it offers) and the commitlog bytes each holds. A structure's `compare(pair)`
answers a `Comparison`: its keys of the `diff` document, in order, and whether the two sides agree on
them. `ops/diff.py` opens both stores, asks every registered structure and assembles the answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmqtool.structures.view import StoreView

SIDES = ("a", "b")


@dataclass(frozen=True)
class Extent:
    """The commitlog bytes a store holds: [start, end)."""

    start: int
    end: int

    def __str__(self) -> str:
        return f"[{self.start}, {self.end})"


@dataclass(frozen=True)
class Pair:
    """Two replicas side by side: A and B read-only, and the log bytes each holds."""

    a: StoreView
    b: StoreView
    held_a: Extent
    held_b: Extent

    @property
    def common(self) -> Extent | None:
        """The log bytes both hold (None: no byte in common)."""
        lo, hi = max(self.held_a.start, self.held_b.start), min(self.held_a.end, self.held_b.end)
        return Extent(lo, hi) if lo < hi else None

    def sides(self) -> tuple[tuple[str, StoreView, Extent], ...]:
        """("a", A, what A holds), ("b", B, what B holds)."""
        return (SIDES[0], self.a, self.held_a), (SIDES[1], self.b, self.held_b)


@dataclass
class Comparison:
    """One structure's answer: its sections of the `diff` document, and whether both sides agree on them."""

    sections: dict = field(default_factory=dict)
    agree: bool = True
