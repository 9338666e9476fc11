"""A streaming text table: column widths are fixed before the first row, each row is one line, a
cell too long for its column ends in an ellipsis (never wraps), and columns a narrow terminal cannot
hold are left out by priority and named once on stderr."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TextIO

from rich.cells import cell_len, set_cell_size

from rmqtool.cli.output import PIPED_WIDTH, printable

GAP = "  "
ELLIPSIS = "…"


@dataclass(frozen=True)
class Column:
    name: str
    width: int  # the width the column asks for
    least: int = 0  # elastic text: may shrink to this (0: a number, never shrunk)
    right: bool = False
    keep: int = 0  # when columns must go, the lowest `keep` goes first


class Grid:
    """Columns fitted to `width`; `line(cells)` renders one row (cells in the order the columns were
    given; cells of hidden columns are skipped). Text columns are escaped and cut to fit; number
    columns are formatted as they are."""

    def __init__(self, columns: Sequence[Column], width: int, sample: Sequence[Sequence] | None = None) -> None:
        """`sample`: rows given column by column; a column is then only as wide as its sample needs
        (up to its `width`)."""
        if sample is not None:
            columns = [_sized(c, values) for c, values in zip(columns, sample, strict=True)]
        self.columns, self.widths, self.hidden = _fit(list(columns), width)
        self._index = [columns.index(c) for c in self.columns]
        self._text = [(k, w, c.right) for k, (c, w) in enumerate(zip(self.columns, self.widths, strict=True))
                      if c.least]
        self._format = GAP.join(f"{{{k}:{'>' if c.right else '<'}{w}}}"
                                for k, (c, w) in enumerate(zip(self.columns, self.widths, strict=True))).format

    def header(self) -> str:
        return GAP.join(fit_cell(c.name, w, c.right) for c, w in zip(self.columns, self.widths, strict=True)).rstrip()

    def rule(self) -> str:
        return GAP.join("─" * w for w in self.widths)

    def lines(self, columns: Sequence[Sequence]) -> list[str]:
        """Rows given column by column (one list per column, hidden ones included) as lines."""
        shown = [columns[i] for i in self._index]
        for k, width, right in self._text:
            cells = shown[k]
            whole = "".join(cells)  # one check of the column in C, not three calls per cell
            if whole.isascii() and whole.isprintable():  # one character a cell: cut, the format pads
                if max(map(len, cells), default=0) > width:
                    shown[k] = [t if len(t) <= width else t[: width - 1] + ELLIPSIS for t in cells]
                continue
            shown[k] = [t if t.isascii() and t.isprintable() and len(t) <= width else
                        fit_cell(printable(t), width, right) for t in cells]
        fmt = self._format
        return [fmt(*row).rstrip() for row in zip(*shown, strict=True)]


def fit_cell(text: str, width: int, right: bool = False) -> str:
    """`text` padded to `width` terminal cells, or cut to it with an ellipsis."""
    size = len(text) if text.isascii() else cell_len(text)
    if size > width:
        text = (text[: width - 1] if text.isascii() else set_cell_size(text, width - 1)) + ELLIPSIS
        size = width
    pad = " " * (width - size)
    return pad + text if right else text + pad


def _sized(column: Column, values: Sequence) -> Column:
    """`column` as wide as the widest of `values` and its name need, at most its own width."""
    from dataclasses import replace

    need = max((len(str(v)) for v in values), default=0)
    width = min(column.width, max(need, len(column.name))) if column.least else max(column.width, need)
    return replace(column, width=width, least=min(column.least, width))


def _fit(columns: list[Column], width: int) -> tuple[list[Column], list[int], list[str]]:
    """The columns that fit in `width` and their widths: elastic ones shrink first (widest first),
    then the least kept column goes, until the row fits."""
    hidden: list[str] = []
    while True:
        widths = [max(c.width, len(c.name) if not c.least else 0) for c in columns]
        floor = [max(c.least, min(len(c.name), c.least + 4)) if c.least else w for c, w in zip(columns, widths,
                                                                                              strict=True)]
        excess = sum(widths) + len(GAP) * (len(columns) - 1) - width
        for i in sorted(range(len(columns)), key=lambda k: columns[k].keep):
            if excess <= 0:
                break
            cut = min(excess, widths[i] - floor[i])
            widths[i] -= cut
            excess -= cut
        if excess <= 0 or len(columns) == 1:
            return columns, widths, hidden
        drop = min(range(len(columns)), key=lambda k: columns[k].keep)
        hidden.append(columns.pop(drop).name)


def terminal_width() -> int:
    """COLUMNS when set, the terminal's width on a terminal, else a width for files and pipes."""
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return PIPED_WIDTH


@contextmanager
def paged() -> Iterator[TextIO]:
    """Where lines go: a pager ($PAGER, else `less -FRSX`) when stdout is a terminal, stdout otherwise.
    A pager quit early raises BrokenPipeError out of the block, as a closed pipe does (the CLI then exits
    0 quietly); the pager is waited for whatever happened, so the shell gets the terminal back after it."""
    pager = os.environ.get("PAGER", "less -FRSX")
    if not sys.stdout.isatty() or not pager or not shutil.which(pager.split()[0]):
        yield sys.stdout
        return
    proc = subprocess.Popen(pager, shell=True, stdin=subprocess.PIPE, text=True, encoding="utf-8")
    try:
        yield proc.stdin
    finally:
        with _interrupts_left_to_the_pager():
            with suppress(BrokenPipeError):
                proc.stdin.close()
            proc.wait()


@contextmanager
def _interrupts_left_to_the_pager() -> Iterator[None]:
    """Ctrl-C ignored in this block: it reaches the pager too, which handles it (less stops a search);
    a command that left while its pager runs would give the shell a terminal the pager still reads."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def write_table(out: TextIO, columns: Sequence[Column], parts: Iterable[Sequence[Sequence] | str],
                width: int | None = None, every_field: str = "--jsonl", flush: bool = False) -> int:
    """A table of `parts` (rows given column by column, or a str written as it is: a note between
    rows), its columns sized on the first rows and fitted to `width` (the terminal's); the columns
    left out are named on stderr. Returns the number of rows written. `flush`: each part is flushed as
    it is written (rows that come one by one)."""
    parts = iter(parts)
    pending: list[str] = []
    first = None
    for part in parts:
        if isinstance(part, str):
            pending.append(part)
        else:
            first = part
            break
    grid = Grid(columns, width or terminal_width(), first)
    if grid.hidden:
        sys.stderr.write(f"columns left out at this width: {', '.join(grid.hidden)} ({every_field} has every field)\n")
    out.write(grid.header() + "\n" + grid.rule() + "\n")
    n = 0
    for part in itertools.chain(pending, [first] if first is not None else [], parts):
        if isinstance(part, str):
            out.write(part + "\n")
        else:
            lines = grid.lines(part)
            out.write("\n".join(lines) + "\n" if lines else "")
            n += len(lines)
        if flush:
            out.flush()
    return n
