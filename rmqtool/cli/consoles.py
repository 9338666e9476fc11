"""The rich consoles and the safe table of the CLI, imported only by output that uses rich."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rmqtool.cli.screen import screen_width, terminal_text


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """The reader went away (`| head`): rich would exit 1, which says damage; the CLI exits 0."""
        self.quiet = True
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise BrokenPipeError


def _width(stream) -> int | None:
    """`screen.screen_width`, left to rich on a terminal (it follows a resize)."""
    return None if stream.isatty() else screen_width(stream)


stdout = _Console(highlight=False, soft_wrap=False, width=_width(sys.stdout))
stderr = Console(stderr=True, highlight=False, width=_width(sys.stderr))


class SafeTable(Table):
    """A table whose text cells are shown as text: control characters escaped, markup inert (cells
    that are rich `Text` objects are the caller's styling and pass as they are)."""

    def add_row(self, *cells, **kwargs) -> None:
        super().add_row(*(c if isinstance(c, Text) else terminal_text(c) for c in cells), **kwargs)
