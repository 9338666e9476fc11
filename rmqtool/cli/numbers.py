"""Numbers a person types: every integer option is a Java long (offsets, counts, times and sizes of a store are),
every decimal one a finite number. Both are refused where click parses them, naming the option and the range it
takes (an option that starts at 1 says 1..9223372036854775807, not a long's negative half)."""

from __future__ import annotations

import math

import click

from rmqtool.structures.layout import JAVA_LONG_MAX, JAVA_LONG_MIN


class Long(click.IntRange):
    """An integer within a Java long, and within the option's own bounds when it has any."""

    def __init__(self, within: click.IntRange | None = None) -> None:
        if within is None:
            super().__init__()
        else:
            super().__init__(within.min, within.max, within.min_open, within.max_open, within.clamp)
        self.name = "integer" if within is None else "integer range"  # the help's metavar, as typer's own

    def convert(self, value, param, ctx) -> int:
        number = click.INT.convert(value, param, ctx)
        low, high = self.bounds()
        if self.clamp or low <= number <= high:
            return number if self.min is None and self.max is None else super().convert(number, param, ctx)
        if self.min is None and self.max is None:
            self.fail(f"{number} is out of range (a signed 64-bit integer: {low}..{high}).", param, ctx)
        self.fail(f"{number} is out of range ({low}..{high}).", param, ctx)

    def bounds(self) -> tuple[int, int]:
        """The lowest and highest value the option takes: its own bounds within a Java long."""
        low = JAVA_LONG_MIN if self.min is None else max(JAVA_LONG_MIN, self.min + (1 if self.min_open else 0))
        high = JAVA_LONG_MAX if self.max is None else min(JAVA_LONG_MAX, self.max - (1 if self.max_open else 0))
        return low, high

    def _describe_range(self) -> str:
        return "" if self.min is None and self.max is None else super()._describe_range()


class Finite(click.FloatRange):
    """A decimal number that is neither nan nor infinite, within the option's own bounds when it has any."""

    def __init__(self, within: click.FloatRange | None = None) -> None:
        if within is None:
            super().__init__()
        else:
            super().__init__(within.min, within.max, within.min_open, within.max_open, within.clamp)
        self.name = "float" if within is None else "float range"

    def convert(self, value, param, ctx) -> float:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value} is not a finite number.", param, ctx)
        return number if self.min is None and self.max is None else super().convert(number, param, ctx)

    def _describe_range(self) -> str:
        return "" if self.min is None and self.max is None else super()._describe_range()


def bound_numbers(command: click.Command) -> click.Command:
    """`command` with every integer parameter (its subcommands' included) a `Long` and every decimal one a
    `Finite`, each keeping the bounds it declared."""
    for param in command.params:
        kind = param.type
        if isinstance(kind, click.IntRange) and not isinstance(kind, Long):
            param.type = Long(kind)
        elif type(kind) is click.types.IntParamType:
            param.type = Long()
        elif isinstance(kind, click.FloatRange) and not isinstance(kind, Finite):
            param.type = Finite(kind)
        elif type(kind) is click.types.FloatParamType:
            param.type = Finite()
    for sub in getattr(command, "commands", {}).values():
        bound_numbers(sub)
    return command
