"""Delay levels (`messageDelayLevel`) and the schedule topic delayed messages are stored under."""

from __future__ import annotations

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
UNKNOWN_LEVEL_DELAY_MS = 1000


def parse_delay_levels(text: str) -> list[int]:
    """Delays in ms of levels 1..n, from a `messageDelayLevel` value such as `1s 5s 1m 2h`."""
    levels = []
    for word in text.split():
        unit = _UNIT_MS.get(word[-1:])
        if unit is None or not word[:-1].isdigit():
            raise ValueError(f"bad delay level {word!r} in messageDelayLevel")
        levels.append(int(word[:-1]) * unit)
    return levels


def deliver_timestamp(level: int, store_timestamp: int, levels_ms: list[int]) -> int:
    """When a message of `level` stored at `store_timestamp` is due (the schedule queue's tagsCode)."""
    if 1 <= level <= len(levels_ms):
        return store_timestamp + levels_ms[level - 1]
    return store_timestamp + UNKNOWN_LEVEL_DELAY_MS
