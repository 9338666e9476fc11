"""Times as people type them: epoch milliseconds, or ISO 8601 (a date alone is its midnight UTC;
a time without a zone is UTC)."""

from __future__ import annotations

from datetime import datetime, timezone

from rmqtool.errors import RmqError, warn
from rmqtool.text import iso_time

SECONDS_LOOK = (10**9, 10**11)  # seconds of 2001 .. 5138 that as milliseconds are 1970-01-12 .. 1973-03-03
EXAMPLES = "e.g. 1700000000000, 2026-11-25, 2026-11-25T10:30:00Z or 2026-11-25T11:30:00+01:00"


def epoch_ms(text: str | None, option: str) -> int | None:
    """`text` as epoch milliseconds; None stays None; anything else is one clear error."""
    if text is None:
        return None
    value = text.strip()
    if value.lstrip("-").isdigit():
        ms = int(value)
        if SECONDS_LOOK[0] <= ms < SECONDS_LOOK[1]:
            warn(f"{option} {ms} is read as epoch milliseconds ({iso_time(ms)}); in seconds it is "
                 f"{iso_time(ms * 1000)}: give {ms * 1000} for that")
        return ms
    iso = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        raise RmqError(f"{option} {text!r} is neither epoch milliseconds nor an ISO 8601 time ({EXAMPLES})") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return int(when.timestamp() * 1000)


def time_window(begin: str | None, end: str | None) -> tuple[int | None, int | None]:
    """`--begin` and `--end` as epoch milliseconds (None: not given); a window that holds no instant is
    refused, naming the options given."""
    low, high = epoch_ms(begin, "--begin"), epoch_ms(end, "--end")
    if low is not None and high is not None and low > high:
        raise RmqError(f"--begin {iso_time(low)} is after --end {iso_time(high)}: no time lies between them")
    return low, high
