"""The store settings the structures read, as a Protocol the engine's `StoreConfig` satisfies.

Not `StoreConfig` moved down: reading a broker.conf (the broker's key list, older spellings, typo hints)
and the settings only the engine and HA read stay with it in `engine`; the structures need only these
fields. A module of its own, importing no structure, so any structure's folder can take it without a circle.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class StoreSettings(Protocol):
    """The broker.conf settings the structures read."""

    mappedFileSizeCommitLog: int
    mappedFileSizeConsumeQueue: int
    maxHashSlotNum: int
    maxIndexNum: int
    messageIndexEnable: bool
    messageIndexSafe: bool
    checkCRCOnRecover: bool
    given: frozenset[str]  # the keys a broker.conf set (the others are the broker's defaults)

    @property
    def delay_levels_ms(self) -> list[int]: ...
