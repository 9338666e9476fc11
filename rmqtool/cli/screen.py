"""Who draws on the terminal, how wide, and what text is safe to show there: a pager, once started, has it
alone.

Live displays on stderr (the progress bars of `output`) register how to stop them; `pager()` stops them
before the pager starts, and lines meant for stderr while it runs (notes, warnings) are held and written
when it has ended, below what it showed. Imports nothing heavy: `output.note` goes through here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rmqtool.text import printable

_displays: list[Callable[[], None]] = []  # how to stop each live display drawn now
_held: list[str] | None = None  # lines for stderr while a pager runs; None: no pager


@contextmanager
def display(stop: Callable[[], None]) -> Iterator[None]:
    """A live display drawn in this block, which `stop()` takes off the screen for good."""
    _displays.append(stop)
    try:
        yield
    finally:
        _displays.remove(stop)


def paging() -> bool:
    """Whether a pager has the terminal now."""
    return _held is not None


@contextmanager
def pager() -> Iterator[None]:
    """The block in which a pager has the terminal: every live display is stopped first, and what is written
    to stderr through `write_stderr` waits until the block ends."""
    global _held
    for stop in list(_displays):
        stop()
    _held = []
    try:
        yield
    finally:
        held, _held = _held, None
        write_stderr("".join(held))


def write_stderr(text: str) -> None:
    """`text` on stderr now, or when the running pager has ended."""
    if _held is not None:
        _held.append(text)
    elif text:
        sys.stderr.write(text)


PIPED_WIDTH = 1 << 24  # output to a file or a pipe is never wrapped: lines and tables as wide as they need


def screen_width(stream) -> int:
    """The one width rule of tables, cards and lines: a terminal's own width (COLUMNS when set, or 80 when
    the terminal does not say); output to a file or a pipe is never wrapped (PIPED_WIDTH)."""
    import shutil

    return shutil.get_terminal_size().columns if stream.isatty() else PIPED_WIDTH


def terminal_text(value: object) -> str:
    """A string from a store made safe to print in rich output: `printable`, and markup inert."""
    from rich.markup import escape

    return escape(printable(value))
