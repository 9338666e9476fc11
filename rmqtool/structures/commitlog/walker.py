"""The compiled walker's Python face: its rows and its stops by name.

`Rows` holds what a walk writes for every record it accepts (`kernels.GEO_*` columns); its
properties are views of those columns, not copies, and `table` is the array the compiled passes
take. `Step` is one call of the walk: where it began and stopped, how many rows it wrote, and why
it stopped, asked by predicate. Policy `scan` (the default) is decode's and verify's acceptance,
`broker=True` the 4.9 broker's for recovery (see `kernels.walk`). No code outside this folder
needs a column index or a stop code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from rmqtool.structures.commitlog import kernels
from rmqtool.structures.commitlog.kernels import (
    GEO_BODY,
    GEO_COLUMNS,
    GEO_PROPS,
    GEO_PROPS_LEN,
    GEO_START,
    GEO_TOPIC,
    GEO_TOPIC_LEN,
    STOP_BLANK,
    STOP_END,
    STOP_FULL,
    STOP_REASONS,
    STOP_WINDOW,
)
from rmqtool.structures.commitlog.message import MIN_RECORD_LEN


class Rows:
    """Record geometry, one row per record: start, body, topic (and its length), properties (and their
    length), positions within the segment buffer the walk read."""

    __slots__ = ("table",)

    def __init__(self, table: np.ndarray) -> None:
        self.table = table  # (n, GEO_COLUMNS) int64, what `kernels.walk` fills

    @classmethod
    def empty(cls, n: int) -> Rows:
        """Room for `n` rows."""
        return cls(np.empty((n, GEO_COLUMNS), dtype=np.int64))

    @classmethod
    def room(cls, window: int) -> Rows:
        """Room that a walk over `window` bytes cannot fill."""
        return cls.empty(window // MIN_RECORD_LEN + 1)

    @classmethod
    def of(cls, start, body, topic, topic_len, props, props_len) -> Rows:
        """Rows from their columns (a batch's record positions)."""
        return cls(np.stack([start, body, topic, topic_len, props, props_len], axis=1).astype(np.int64))

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, which) -> Rows:
        """The rows a slice (a view), a mask or an index array selects."""
        return Rows(self.table[which])

    def copy(self) -> Rows:
        return Rows(self.table.copy())

    @property
    def start(self) -> np.ndarray:
        return self.table[:, GEO_START]

    @property
    def body(self) -> np.ndarray:
        return self.table[:, GEO_BODY]

    @property
    def topic(self) -> np.ndarray:
        return self.table[:, GEO_TOPIC]

    @property
    def topic_len(self) -> np.ndarray:
        return self.table[:, GEO_TOPIC_LEN]

    @property
    def props(self) -> np.ndarray:
        return self.table[:, GEO_PROPS]

    @property
    def props_len(self) -> np.ndarray:
        return self.table[:, GEO_PROPS_LEN]

    def end_of(self, i: int) -> int:
        """Where record `i` ends (its properties end it)."""
        return int(self.table[i, GEO_PROPS] + self.table[i, GEO_PROPS_LEN])


class Step(NamedTuple):
    """One call of the walk: from `start`, `count` rows written, stopped at `stop`."""

    start: int
    count: int
    stop: int
    why: int
    last_store_timestamp: int  # of the last record accepted, -1 when none

    @property
    def blank(self) -> bool:
        """Stopped at an end-of-segment (blank) marker."""
        return self.why == STOP_BLANK

    @property
    def file_end(self) -> bool:
        """Stopped where no record's totalSize and magic fit before the buffer's end."""
        return self.why == STOP_END

    @property
    def window_end(self) -> bool:
        """Stopped at the end of the bytes it was given: a walk goes on from `stop`."""
        return self.why == STOP_WINDOW

    @property
    def goes_on(self) -> bool:
        """Stopped for room (window or rows), not at a record it refused or an end."""
        return self.why in (STOP_WINDOW, STOP_FULL)

    @property
    def reason(self) -> str:
        return STOP_REASONS[self.why]


def _policy(broker: bool) -> int:
    return kernels.POLICY_BROKER if broker else kernels.POLICY_SCAN


def walk_once(buf, pos: int, end: int, base: int, rows: Rows, *, broker: bool = False,
              check_crc: bool = False) -> Step:
    """One compiled walk from `pos`, records starting before `end`, as many as `rows` holds."""
    n, stop, why, ts = kernels.walk(buf, pos, end, base, rows.table, _policy(broker), check_crc)
    return Step(pos, n, stop, why, ts)


def walk_on(buf, pos: int, end: int | None, base: int, rows: Rows, *, broker: bool = False,
            check_crc: bool = False, window: int | None = None) -> Iterator[Step]:
    """The one loop around the walk: from `pos`, `window` bytes at a time (None: as many records as `rows`
    holds, up to `end`; `end` None: no bound but the file), a `Step` per call, ending after a call that
    stopped for another reason than room (a blank, the file's end, a record the policy refuses)."""
    policy, out = _policy(broker), rows.table
    while True:
        hi = pos + window if window is not None else end
        if end is not None:
            hi = min(hi, end)
        n, stop, why, ts = kernels.walk(buf, pos, hi, base, out, policy, check_crc)
        step = Step(pos, n, stop, why, ts)
        yield step
        if not step.goes_on or stop == pos or (end is not None and stop >= end):
            return
        pos = stop
