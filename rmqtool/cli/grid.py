"""A streaming text table: column widths are fixed before the first row, each row is one line, a
cell too long for its column ends in an ellipsis on a terminal (never wraps) and is written whole in a
pipe, and columns a narrow terminal cannot hold are left out by priority and named once on stderr."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TextIO

from rich.cells import cell_len, set_cell_size

from rmqtool.cli import screen
from rmqtool.cli.output import note, printable
from rmqtool.cli.screen import PIPED_WIDTH, screen_width

GAP = "  "
ELLIPSIS = "…"


@dataclass(frozen=True)
class Column:
    name: str
    width: int  # the width the column asks for
    least: int = 0  # elastic text: may shrink to this (0: a number, never shrunk)
    right: bool = False
    keep: int = 0  # when columns must go, the lowest `keep` goes first
    crowds: bool = False  # elastic columns kept before it shrink (to their floor) to make room for all of it
    whole: bool = False  # a value no wider than `width` is never cut for a crowding column (it is left out instead)
    fits: int = 0  # set from the sample when `whole`: the widest value no wider than `width`


class Grid:
    """Columns fitted to `width`; `line(cells)` renders one row (cells in the order the columns were
    given; cells of hidden columns are skipped). Text columns are escaped and cut to fit; number
    columns are formatted as they are. A cell is cut only when the row has no room for it: columns are
    as wide as their sample needs, text columns take the room left up to the width they ask for (for
    later rows), and a last text column all of it, unpadded."""

    def __init__(self, columns: Sequence[Column], width: int, sample: Sequence[Sequence] | None = None) -> None:
        """`sample`: rows given column by column; a column is then as wide as its sample needs."""
        asked = {c.name: c.width for c in columns}
        if sample is not None:
            columns = [_sized(c, values) for c, values in zip(columns, sample, strict=True)]
        self.columns, fitted, self.hidden = _fit(list(columns), width)
        self.widths = _grown(self.columns, fitted, width, asked)
        self._index = [columns.index(c) for c in self.columns]
        last = self.columns[-1]
        self._open = bool(last.least) and not last.right  # the last column is never padded
        self._ruled = [*self.widths[:-1], min(self.widths[-1], fitted[-1])]
        self._text = [(k, w, c.right) for k, (c, w) in enumerate(zip(self.columns, self.widths, strict=True))
                      if c.least]
        self._formats: dict[tuple[int, ...], Callable[..., str]] = {}
        self._cut = width < PIPED_WIDTH  # a pipe's row has room for every cell: a longer one shifts the row

    def header(self) -> str:
        return GAP.join(fit_cell(c.name, w, c.right) for c, w in zip(self.columns, self._ruled, strict=True)).rstrip()

    def rule(self) -> str:
        return GAP.join("─" * w for w in self._ruled)

    def lines(self, columns: Sequence[Sequence]) -> list[str]:
        """Rows given column by column (one list per column, hidden ones included) as lines."""
        shown = [columns[i] for i in self._index]
        padded = []
        last = len(shown) - 1
        for k, width, right in self._text:
            cells = shown[k]
            whole = "".join(cells)  # one check of the column in C, not three calls per cell
            if whole.isascii() and whole.isprintable():  # one character a cell: cut, the format pads
                if self._cut and max(map(len, cells), default=0) > width:
                    shown[k] = [t if len(t) <= width else t[: width - 1] + ELLIPSIS for t in cells]
                continue
            pad = not (self._open and k == last)  # wide characters: padded here, to terminal cells
            shown[k] = [fit_cell(printable(t), width, right, pad, self._cut) for t in cells]
            padded.append(k)
        fmt = self._format(tuple(padded))
        return [fmt(*row).rstrip() for row in zip(*shown, strict=True)]

    def _format(self, padded: tuple[int, ...]) -> Callable[..., str]:
        """The row format when the columns `padded` come padded (the open last column never is)."""
        fmt = self._formats.get(padded)
        if fmt is None:
            last = len(self.columns) - 1
            fmt = self._formats[padded] = GAP.join(
                f"{{{k}}}" if k in padded or (self._open and k == last) else f"{{{k}:{'>' if c.right else '<'}{w}}}"
                for k, (c, w) in enumerate(zip(self.columns, self.widths, strict=True))).format
        return fmt


def fit_cell(text: str, width: int, right: bool = False, pad: bool = True, cut: bool = True) -> str:
    """`text` padded to `width` terminal cells (unless not `pad`), or cut to it with an ellipsis (unless not
    `cut`: then as it is)."""
    size = len(text) if text.isascii() else cell_len(text)
    if size > width and not cut:
        return text
    if size > width:
        text = (text[: width - 1] if text.isascii() else set_cell_size(text, width - 1)) + ELLIPSIS
        size = width
    if not pad:
        return text
    fill = " " * (width - size)
    return fill + text if right else text + fill


def _sized(column: Column, values: Sequence) -> Column:
    """`column` as wide as the widest of `values` and its name need (a number column at least its own width:
    the widest number it will hold, so that later rows align)."""
    from dataclasses import replace

    if not column.least:
        return replace(column, width=max(column.width, max((len(str(v)) for v in values), default=0)))
    texts = [v if isinstance(v, str) else str(v) for v in values]
    whole = "".join(texts)
    if whole.isascii() and whole.isprintable():
        need = max(map(len, texts), default=0)
    else:
        need = max((cell_len(printable(t)) for t in texts), default=0)
    width = max(need, len(column.name))
    sizes = [len(t) for t in texts] if whole.isascii() and whole.isprintable() else \
        [cell_len(printable(t)) for t in texts]
    fits = max((n for n in sizes if n <= column.width), default=0) if column.whole else 0
    return replace(column, width=width, least=min(column.least, width), fits=min(fits, width))


def _fit(columns: list[Column], width: int) -> tuple[list[Column], list[int], list[str]]:
    """The columns shown in `width`, their widths, and the names of those left out (least kept first).
    The most kept column is placed first: each as wide as it needs when that fits, an elastic one (a body)
    at its floor when only that fits, otherwise left out (a less kept one that fits still shows); a column
    that `crowds` first narrows the elastic ones placed before it (towards their floors) to show whole. The
    room left then widens the elastic ones, the most kept first. So a cell is cut only when the row has no
    room for it. In a column marked `whole`, a value that fits the width the column asks for (`Column.fits`) is
    never cut to make room for a crowding column: the crowding column is left out instead."""
    need = [max(c.width, len(c.name)) if not c.least else c.width for c in columns]
    floor = [max(c.least, min(len(c.name), c.least + 4)) if c.least else n for c, n in zip(columns, need,
                                                                                          strict=True)]
    guard = [max(f, min(c.fits, n)) for c, f, n in zip(columns, floor, need, strict=True)]  # crowding stops here
    order = sorted(range(len(columns)), key=lambda k: -columns[k].keep)
    chosen: dict[int, int] = {}
    used = -len(GAP)
    for i in order:
        room = width - used - len(GAP)
        if need[i] > room and columns[i].crowds:  # elastic columns placed before give up room
            spare = sum(max(chosen[j] - guard[j], 0) for j in chosen)
            if floor[i] <= room + spare:
                room += _shrink(chosen, guard, min(need[i] - room, spare), [c.keep for c in columns])
                used = sum(chosen.values()) + len(GAP) * (len(chosen) - 1) if chosen else -len(GAP)
        if need[i] <= room or floor[i] <= room:
            chosen[i] = need[i] if need[i] <= room else floor[i]
            used += len(GAP) + chosen[i]
    if not chosen:  # not even one column fits: the most kept, as narrow as it may be
        i = order[0]
        chosen[i] = floor[i]
    for i in order:
        if i in chosen and used < width:
            grow = min(width - used, need[i] - chosen[i])
            chosen[i] += grow
            used += grow
    shown = sorted(chosen)
    hidden = sorted(set(range(len(columns))) - set(chosen), key=lambda k: columns[k].keep)
    return [columns[i] for i in shown], [chosen[i] for i in shown], [columns[i].name for i in hidden]


def _shrink(chosen: dict[int, int], floor: list[int], wanted: int, keep: list[int]) -> int:
    """Take up to `wanted` cells from the columns `chosen`, none below its floor, a cell at a time from the one
    with the most above its floor (the least kept of equals): two long names end as wide as each other. What
    was taken."""
    taken = 0
    while taken < wanted:
        j = max(chosen, key=lambda k: (chosen[k] - floor[k], -keep[k]))
        if chosen[j] <= floor[j]:
            break
        chosen[j] -= 1
        taken += 1
    return taken


def _grown(columns: list[Column], widths: list[int], width: int, asked: dict[str, int]) -> list[int]:
    """`widths` with the room the row leaves in `width` given to the text columns, for later rows: each up to
    the width it asks for (the most kept first), a left-aligned last one all that remains."""
    spare = width - sum(widths) - len(GAP) * (len(columns) - 1)
    widths = list(widths)
    last = len(columns) - 1
    open_last = bool(columns[last].least) and not columns[last].right
    for i in sorted(range(last if open_last else last + 1), key=lambda k: -columns[k].keep):
        if spare <= 0:
            break
        grow = max(0, min(spare, asked.get(columns[i].name, 0) - widths[i])) if columns[i].least else 0
        widths[i] += grow
        spare -= grow
    if spare > 0 and open_last:
        widths[last] += spare
    return widths


@contextmanager
def paged() -> Iterator[TextIO]:
    """Where lines go: a pager ($PAGER, else `less -FRSX`) when stdout is a terminal, stdout otherwise.
    A pager quit early raises BrokenPipeError out of the block, as a closed pipe does (the CLI then exits
    0 quietly); the pager is waited for whatever happened, so the shell gets the terminal back after it."""
    pager = os.environ.get("PAGER", "less -FRSX")
    if not sys.stdout.isatty() or not pager or not shutil.which(pager.split()[0]):
        yield sys.stdout
        return
    with screen.pager():  # progress bars off the screen before the pager starts, notes held until it ends
        proc = subprocess.Popen(pager, shell=True, stdin=subprocess.PIPE, text=True, encoding="utf-8")
        try:
            yield proc.stdin
        finally:
            with _interrupts_left_to_the_pager():
                with suppress(BrokenPipeError):
                    proc.stdin.close()
                proc.wait()


def _interrupts_left_to_the_pager():
    """Ctrl-C ignored in this block: it reaches the pager too, which handles it (less stops a search);
    a command that left while its pager runs would give the shell a terminal the pager still reads."""
    import signal

    from rmqtool.files.signals import uninterrupted

    return uninterrupted((signal.SIGINT,))


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
    grid = Grid(columns, width or screen_width(sys.stdout), first)
    if grid.hidden:
        note(f"columns left out at this width: {', '.join(grid.hidden)} ({every_field} has every field)")
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
