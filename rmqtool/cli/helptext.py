"""Help text that re-flows to the terminal's width.

Docstrings are wrapped at the source's line length, and typer's rich markup mode keeps those line breaks
(in the command lists and in every paragraph after the first), so help came out ragged. `reflow_app` joins
each paragraph of every command's and group's help into one line before click sees it; rich then wraps it
to the terminal. Each `Example:` starts a line of its own.

Help is as wide as the terminal (80 columns when there is none, rich's rule) and never cut: option names keep
their column whole, and a word too long for its cell (an address, a file name) folds onto the next line where
rich would end it in an ellipsis (`HelpCommand`, `HelpGroup`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from contextlib import contextmanager

import click
import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import DefaultPlaceholder


def reflow(text: str | None) -> str | None:
    """`text` with each paragraph on one line, except that each `Example:` starts a line of its own."""
    if not text:
        return text
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", inspect.cleandoc(text)):
        lines: list[str] = []
        for line in paragraph.splitlines():
            line = line.strip()
            if lines and not line.startswith("Example:"):
                lines[-1] += " " + line
            else:
                lines.append(line)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def reflow_app(app: typer.Typer) -> None:
    """Re-flow the help of `app`, of its commands (given as help= or as the docstring) and of its sub-apps,
    each rendered by `HelpCommand` or `HelpGroup`."""
    if isinstance(app.info.help, str):
        app.info.help = reflow(app.info.help)
    app.info.cls = _ours(app.info.cls, HelpGroup)
    for command in app.registered_commands:
        given = command.help if isinstance(command.help, str) else None
        command.help = reflow(given if given is not None else inspect.getdoc(command.callback))
        command.cls = _ours(command.cls, HelpCommand)
    for group in app.registered_groups:
        if isinstance(group.help, str):
            group.help = reflow(group.help)
        group.cls = _ours(group.cls, HelpGroup)
        if group.typer_instance is not None:
            reflow_app(group.typer_instance)


def _ours(given, ours: type) -> type:
    """`ours` where typer would use its own class (nothing given, or typer's default), else `given`."""
    value = given.value if isinstance(given, DefaultPlaceholder) else given
    return ours if value in (None, *ours.__bases__) else given


_OPTION_CELLS = 6  # a row of typer's options panel: long, short, negative long and short names, value, text


@contextmanager
def _uncut_tables() -> Iterator[None]:
    """Within this block typer's help panels lay out with `_UncutTable` (typer builds them with the `Table` of
    its `rich_utils`; rich is imported here only when help is shown)."""
    from rich.columns import Columns
    from rich.table import Table
    from rich.text import Text
    from typer import rich_utils

    class _UncutTable(Table):
        """A panel of typer's help that is never cut: an option's names (typer gives long, short, negative
        long and negative short ones a column each) share one column, a line for the option and one for its
        negative, as wide as the longest name; the value and the text wrap in what is left, and a word too
        long for its cell folds (in the text, its paragraphs and its default, which typer sets side by side
        as `Columns`)."""

        options = False

        def add_row(self, *renderables, **kwargs) -> None:
            if not self.columns and len(renderables) in (_OPTION_CELLS, _OPTION_CELLS + 1):
                self.options = True
            if self.options:
                *lead, long, short, negative, negative_short, value, text = renderables
                names = [Text(" ").join(t for t in pair if t.plain) for pair in ((long, short),
                                                                                 (negative, negative_short))]
                renderables = (*lead, Text("\n").join(t for t in names if t.plain), value, text)
            for cell in renderables:
                for part in cell.renderables if isinstance(cell, Columns) else ():
                    if isinstance(part, Text) and part.overflow is None:
                        part.overflow = "fold"
            super().add_row(*renderables, **kwargs)
            for column in self.columns[:-2]:
                column.no_wrap = True
            for column in self.columns:
                column.overflow = "fold"

    before, rich_utils.Table = rich_utils.Table, _UncutTable
    try:
        yield
    finally:
        rich_utils.Table = before


class HelpCommand(TyperCommand):
    """A command whose help wraps and is never cut (`_uncut_tables`)."""

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with _uncut_tables():
            super().format_help(ctx, formatter)


class HelpGroup(TyperGroup):
    """A group whose help wraps and is never cut (`_uncut_tables`). A mistyped command name gets click's
    "Did you mean" alone: typer's would repeat it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **{**kwargs, "suggest_commands": False})

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with _uncut_tables():
            super().format_help(ctx, formatter)
