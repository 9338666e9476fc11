"""Rendering shared by the commands: JSON to stdout, rich tables and panels, errors to stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rmqtool.cli import screen
from rmqtool.text import duration, iso_time, iso_times, printable, printable_bytes  # noqa: F401 - the CLI's names for them

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

def _console(name: str) -> Console:
    from rmqtool.cli import consoles

    return getattr(consoles, name)


def __getattr__(name: str) -> Console:
    """`output.stdout` and `output.stderr`, the rich consoles, made on first use: a command that prints
    JSON never imports rich, which is a fifth of a short command's time."""
    if name in ("stdout", "stderr"):
        return _console(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def emit_json(doc: object) -> None:
    """One JSON document: objects and lists that hold others indented two spaces, each innermost one (a
    row, a message, a list of numbers) on one line. As easy to read, and written by the C encoder: an
    indented dump of every value runs Python's own, several times slower on documents of many rows."""
    out: list[str] = []
    _json_parts(doc, 0, out)
    out.append("\n")
    sys.stdout.write("".join(out))


_ONE_LINE = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode


def _json_parts(value: object, level: int, out: list[str]) -> None:
    if not _holds_containers(value):
        out.append(_ONE_LINE(value))
        return
    pad, close = "\n" + "  " * (level + 1), "\n" + "  " * level
    if isinstance(value, dict):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            out.append(f"{',' if i else ''}{pad}{_ONE_LINE(key if isinstance(key, str) else str(key))}: ")
            _json_parts(item, level + 1, out)
        out.append(close + "}")
        return
    out.append("[")
    sep = "," + pad
    for i, item in enumerate(value):
        out.append(sep if i else pad)
        if type(item) is dict and not _holds_containers(item):  # a row: the common case, without a call
            out.append(_ONE_LINE(item))
        else:
            _json_parts(item, level + 1, out)
    out.append(close + "]")


_CONTAINERS = frozenset((dict, list, tuple))


def _holds_containers(value: object) -> bool:
    """Whether `value` is an object or list that holds a non-empty object or list."""
    if type(value) is dict:
        return any([type(v) in _CONTAINERS and bool(v) for v in value.values()])
    if isinstance(value, list | tuple):
        return any([type(v) in _CONTAINERS and bool(v) for v in value])
    if isinstance(value, dict):
        return any(isinstance(v, dict | list | tuple) and v for v in value.values())
    return False


def emit(doc: dict, title: str, as_json: bool) -> None:
    """One result: a JSON document for scripts, a key/value panel for people."""
    if as_json:
        emit_json(doc)
    else:
        _console("stdout").print(key_values(title, doc))


def emit_now(doc: dict, title: str, as_json: bool) -> None:
    """`emit`, flushed at once: a write's report, which a SIGKILL must not find in a pipe's buffer."""
    emit(doc, title, as_json)
    sys.stdout.flush()


def emit_jsonl(objects: Iterable[dict]) -> None:
    write = sys.stdout.write
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    for obj in objects:
        write(dumps(obj) + "\n")


def emit_jsonl_line(obj: dict) -> None:
    """One JSON object on its own line of stdout, flushed (a status stream a script reads as it comes)."""
    emit_jsonl((obj,))
    sys.stdout.flush()


def emit_rows(items: Iterable, body: str, as_document: bool = False, flush: bool = False) -> bool:
    """Message row batches and findings (from `ops.log_rows`) as JSON lines, or as one document
    `{"messages": [...]}`; returns whether an error finding was among them. `flush`: each item is flushed
    as it is written (a follow's lines come one by one)."""
    from rmqtool.io.jsonl import jsonl_bytes
    from rmqtool.report import ERROR, Finding

    out = sys.stdout.buffer
    sys.stdout.flush()
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    corrupt = False
    first = True
    if as_document:
        out.write(b'{"messages":[\n')
    for item in items:
        if isinstance(item, Finding):
            corrupt = corrupt or item.severity == ERROR
            text = (dumps({"error": item.reason, **item.to_json()}) + "\n").encode()
        else:  # rows, or lines the read path already rendered
            text = item if isinstance(item, memoryview | bytes) else jsonl_bytes(item, body)
        if as_document and text:
            text = (b"" if first else b",\n") + bytes(text[:-1]).replace(b"\n", b",\n")
        first = first and not text
        out.write(text)
        if flush:
            out.flush()
    if as_document:
        out.write(b"\n]}\n")
    out.flush()
    return corrupt


def table(title: str | None, columns: list[str], **kwargs) -> Table:
    from rmqtool.cli.consoles import SafeTable

    t = SafeTable(title=screen.terminal_text(title) if title else title, title_justify="left", **kwargs)
    for c in columns:
        t.add_column(c, overflow="fold")
    return t


def key_values(title: str, values: dict) -> Table:
    """A card of fields for a person: a value that is not known (None) as "-", a boolean as yes or no, and
    a time (a field named `...Timestamp`/`timestamp` holding epoch milliseconds) as `iso_time` writes it."""
    from rmqtool.cli.consoles import SafeTable

    t = SafeTable(title=screen.terminal_text(title), title_justify="left", show_header=False)
    t.add_column("field", style="bold")
    t.add_column("value")
    for k, v in values.items():
        t.add_row(k, shown_value(k, v))
    return t


_TIME_FIELDS = ("Timestamp", "timestamp")  # the names RocketMQ gives epoch-millisecond fields


def shown_value(name: str, value: object) -> object:
    """The value of field `name` as a card shows it (see `key_values`); anything else as it is."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and name.endswith(_TIME_FIELDS):
        return iso_time(value)
    return value


def findings_table(findings: list, show_all: bool = False) -> Table | None:
    """Findings as a table: one row per group of consecutive findings of one kind on one file
    (`format.report`), or one row per finding with `show_all`; None when there are none."""

    from rmqtool.report import group_findings

    if not findings:
        return None
    if show_all:
        t = table(None, ["severity", "structure", "file", "offset", "bytes", "reason"])
        for f in findings:
            t.add_row(f.severity, f.structure, f.file, f.offset, f.bytes, f.reason)
        return t
    t = table(None, ["severity", "structure", "file", "offsets", "count", "bytes", "reason"])
    for g in group_findings(findings):
        span = str(g.first_offset) if g.count == 1 else f"{g.first_offset}..{g.last_offset}"
        t.add_row(g.severity, g.structure, g.file, span, g.count, g.bytes, g.reason)
    return t


def note(text: str) -> None:
    """One plain line on stderr, never wrapped (held while a pager has the terminal)."""
    screen.write_stderr(printable(text) + "\n")


def warn(text: str) -> None:
    """A warning on stderr, `rmqtool: warning: ...` as the layers below write theirs (`errors.warn`), held while a
    pager has the terminal."""
    console = _console("stderr")
    if not screen.paging():
        console.print(f"rmqtool: [yellow]warning:[/] {text}", markup=True)
        return
    with console.capture() as captured:
        console.print(f"rmqtool: [yellow]warning:[/] {text}", markup=True)
    screen.write_stderr(captured.get())


@contextmanager
def progress(label: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """An `advance(n)` callable drawing a progress bar on stderr, only when stderr is a terminal (gone for
    good when a pager starts)."""
    if not sys.stderr.isatty():
        yield lambda n: None
        return
    from rich.progress import MofNCompleteColumn, Progress, TimeRemainingColumn

    console = _console("stderr")
    columns = bar_columns(console.width, label, [(MofNCompleteColumn, 2 * len(f"{total or 0}") + 1),
                                                 (TimeRemainingColumn, 7)])
    with Progress(*columns, console=console, transient=True) as bar, screen.display(bar.stop):
        task = bar.add_task(label, total=total)
        pending = 0

        def advance(n: int) -> None:
            nonlocal pending
            pending += n
            if pending >= 1000:
                bar.advance(task, pending)
                pending = 0

        yield advance


BAR_LEAST = 10  # a bar narrower than this says nothing: the columns after it go first


def bar_columns(width: int, label: str, after: list[tuple[type, int]]) -> list:
    """A progress bar's columns fitted to `width` on one line, never wrapped: the label (cut with an ellipsis to
    at most a third of the width), the bar, then the columns of `after` ((column class, the widest it draws)),
    the last of them left out first while the bar would be narrower than BAR_LEAST; the bar takes what is left."""
    from rich.progress import BarColumn, TextColumn
    from rich.table import Column

    text = min(len(label), max(width // 3, 1))
    kept = list(after)
    while kept and width - 1 - text - sum(w + 1 for _, w in kept) - 1 < BAR_LEAST:
        kept.pop()
    bar = max(width - 1 - text - sum(w + 1 for _, w in kept) - 1, 1)
    return [TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis", width=text)),
            BarColumn(bar_width=bar), *(cls(table_column=Column(no_wrap=True, width=w)) for cls, w in kept)]


@contextmanager
def scan_progress(label: str) -> Iterator[None]:
    """A bar on stderr (a terminal only) for every commitlog scan in this block: bytes of the log's data, rate,
    time left. A pager that starts takes the bar off the screen for good (`screen.pager`)."""
    if not sys.stderr.isatty():
        yield
        return
    from rich.progress import DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    from rmqtool.engine.reader import scan_observed

    console = _console("stderr")
    columns = bar_columns(console.width, label, [(DownloadColumn, 14), (TransferSpeedColumn, 10),
                                                 (TimeRemainingColumn, 7)])
    # stdout is redirected above the bar only when it is the terminal too: rows for a pipe or a file would
    # otherwise reach the terminal through the bar's console, and `| head` would never see them
    with Progress(*columns, console=console, transient=True,
                  redirect_stdout=sys.stdout.isatty()) as bar, screen.display(bar.stop):
        tasks = []  # the bar appears with the first scan: a command that scans nothing shows none

        def observe(done: int, total: int) -> None:
            if not bar.live.is_started:  # stopped for a pager
                return
            if not tasks:
                tasks.append(bar.add_task(screen.terminal_text(label), total=total))
            bar.update(tasks[0], completed=done, total=total)

        with scan_observed(observe):
            yield


@contextmanager
def stages(labels: list[str], nouns: dict[str, str] | None = None) -> Iterator[Callable[[str, int | None], None]]:
    """A `done(stage, rows)` callable showing a multi-stage job on stderr (terminal only): the
    running stage spins, finished ones show their rows (None: a stage without rows), counted in `nouns[stage]`
    ("rows" unless given). A pager that starts stops it."""
    if not sys.stderr.isatty():
        yield lambda stage, rows: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    nouns = nouns or {}
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=_console("stderr")) as bar, screen.display(bar.stop):
        tasks = {label: bar.add_task(f"{label}", total=1, start=False) for label in labels}
        bar.start_task(tasks[labels[0]])

        def done(stage: str, rows: int) -> None:
            bar.update(tasks[stage], completed=1,
                       description=stage if rows is None else f"{stage}: {rows:,} {nouns.get(stage, 'rows')}")
            later = labels[labels.index(stage) + 1 :]
            if later:
                bar.start_task(tasks[later[0]])

        yield done


def count(n: int, noun: str, plural: str = "") -> str:
    """"1 file", "3 files"."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


_BYTE_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def size(n: int) -> str:
    """A byte count for a glance, exact beside it: "1.2 GiB (1288490188 bytes)"; "512 bytes" below 1 KiB."""
    if abs(n) < 1024:
        return count(n, "byte")
    value, unit = n / 1024, 0
    while abs(value) >= 1024 and unit < len(_BYTE_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.1f} {_BYTE_UNITS[unit]} ({n} bytes)"


def warn_if_locked(paths) -> int | None:
    """Warn when another process holds the lock of the store at `paths` (a `StorePaths`): a read-only
    command's answers may be moving under it. Returns that process's id (None: the lock is free)."""
    from rmqtool.engine.storefiles import StoreFiles

    holder = StoreFiles(paths).holder()
    if holder is not None:
        warn(f"process {holder} holds the store's lock (a running broker?): answers may be moving")
    return holder
