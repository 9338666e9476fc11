"""Times as people type them, one rule for every option that takes one: ISO 8601 (a date alone is its
midnight UTC; a time without a zone is UTC) or epoch milliseconds. A number that reads as seconds
(10^9 .. 10^11) is refused unless `--time-unit` says which unit it is; a negative one always is."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import click
import typer

from rmqtool.errors import RmqError
from rmqtool.structures.layout import JAVA_LONG_MAX
from rmqtool.text import iso_time

SECONDS_LOOK = (10**9, 10**11)  # seconds of 2001 .. 5138 that as milliseconds are 1970-01-12 .. 1973-03-03
EXAMPLES = "e.g. 1700000000000, 2026-11-25, 2026-11-25T10:30:00Z or 2026-11-25T11:30:00+01:00"
TIME_HELP = "epoch ms or ISO 8601; a time without a zone is UTC"
UNITS = ("ms", "s")
_NUMBER = re.compile(r"-?[0-9]+")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

TIME_UNIT = typer.Option(None, "--time-unit", help="How to read a time given as a number: ms (epoch milliseconds, "
                         "even a small one) or s (epoch seconds, multiplied by 1000). Without it a number that "
                         "reads as seconds (10^9 .. 10^11) is refused.", show_default=False,
                         click_type=click.Choice(UNITS))


def epoch_ms(text: str | None, option: str, unit: str | None = None) -> int | None:
    """`text` as epoch milliseconds; None stays None. `unit` (ms, s, or None: not said) is how a number
    reads. A number that looks like seconds with no unit said, a time before 1970, one past a long of
    milliseconds, or text that is no time: one clear error."""
    if text is None:
        return None
    value = text.strip()
    if _NUMBER.fullmatch(value):
        return _number_ms(int(value), option, unit)
    iso = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        raise RmqError(f"{option} {text!r} is neither epoch milliseconds nor an ISO 8601 time ({EXAMPLES})") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    ms = (when - _EPOCH) // timedelta(milliseconds=1)
    if ms < 0:
        raise RmqError(f"{option} {value} is {iso_time(ms)}, before 1970: a store time is epoch milliseconds "
                       "from 1970-01-01T00:00:00.000Z on")
    return ms


def _number_ms(number: int, option: str, unit: str | None) -> int:
    """A number typed for a time, in milliseconds by `unit` (refused when it has to be guessed)."""
    if number < 0:
        raise RmqError(f"{option} {number} is negative: as milliseconds it is {iso_time(number)}, as seconds "
                       f"{_seconds_text(number)}, both before 1970: give milliseconds or ISO 8601 from 1970 on")
    if unit is None and SECONDS_LOOK[0] <= number < SECONDS_LOOK[1]:
        raise RmqError(f"{option} {number} reads as seconds ({iso_time(number * 1000)}); as milliseconds it is "
                       f"{iso_time(number)}: give milliseconds or ISO 8601, or --time-unit s")
    ms = number * 1000 if unit == "s" else number
    if ms > JAVA_LONG_MAX:
        raise RmqError(f"{option} {number}{' s' if unit == 's' else ''} is past the last time a store can hold "
                       f"({JAVA_LONG_MAX} ms)")
    return ms


def _seconds_text(number: int) -> str:
    return iso_time(number * 1000) if number * 1000 >= -JAVA_LONG_MAX - 1 else f"{number} s"


def unit_needs_a_time(unit: str | None, **options: str | None) -> None:
    """A `--time-unit` with none of the command's time options given is refused (options by their names)."""
    if unit is not None and all(v is None for v in options.values()):
        names = " or ".join(f"--{name.replace('_', '-')}" for name in options)
        raise RmqError(f"--time-unit {unit} says how to read {names}: give one of them")


def time_window(begin: str | None, end: str | None, unit: str | None = None) -> tuple[int | None, int | None]:
    """`--begin` and `--end` as epoch milliseconds (None: not given); a window that holds no instant is
    refused, naming the options given."""
    low, high = epoch_ms(begin, "--begin", unit), epoch_ms(end, "--end", unit)
    if low is not None and high is not None and low > high:
        raise RmqError(f"--begin {iso_time(low)} is after --end {iso_time(high)}: no time lies between them")
    return low, high
