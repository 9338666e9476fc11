"""Recovery's walk: the one commitlog walker (`kernels.walk`) under the broker's acceptance policy."""

from __future__ import annotations

import functools

import numpy as np

from rmqtool.format.kernels import (  # noqa: F401 - the stop codes recovery reports
    POLICY_BROKER,
    STOP_BLANK,
    STOP_CRC,
    STOP_END,
    STOP_LENGTH,
    STOP_MAGIC,
    STOP_REASONS,
    STOP_WINDOW,
    walk,
    walk_rows,
)


@functools.lru_cache(maxsize=4)
def _rows(window: int) -> np.ndarray:
    return walk_rows(window)


def recovery_walk(buf, pos: int, check_crc: bool, limit: int) -> tuple[int, int, int, int]:
    """Accept records from `pos` on, starting before `limit`, as the broker's recovery does;
    (stop position, why, records accepted, last storeTimestamp)."""
    n, stop, why, last_ts = walk(buf, pos, limit, 0, _rows(max(limit - pos, 0)), POLICY_BROKER, check_crc)
    return stop, why, n, last_ts
