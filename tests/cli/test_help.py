"""Every command's and group's --help reads as written paragraphs at any width: re-flowed text, no
meaningless defaults, choices listed, and an example that names only files the repository has."""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import click
import pytest
import typer
from click.testing import CliRunner

from rmqtool.cli.app import app
from rmqtool.cli.helptext import reflow

ROOT = Path(__file__).resolve().parents[2]
WIDTHS = (60, 200)
PATH_LIKE = re.compile(r"/|\.(jsonl|parquet|pq|csv|conf)$")
# Paths an example may name outside the repository: a 5.x broker's default store root (no 5.x store with a timer
# log is in the repository for `decode timerlog` to read).
OFF_REPO = {"~/store"}


def _walk(cmd: click.Command, path: tuple[str, ...] = ()):
    yield path, cmd
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from _walk(sub, (*path, name))


COMMAND = typer.main.get_command(app)
COMMANDS = list(_walk(COMMAND))


def render(path: tuple[str, ...], width: int) -> str:
    """`rmqtool PATH --help` as printed on a plain terminal `width` columns wide (rich reads COLUMNS per call)."""
    result = CliRunner().invoke(COMMAND, [*path, "--help"], prog_name="rmqtool",
                                env={"COLUMNS": str(width), "TERM": "dumb", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.output


def _cell(line: str, width: int) -> tuple[int, str, int] | None:
    """(start column, text, cell width) of the description cell of a rendered line: the last column of a
    panel row (columns are set apart by 2+ spaces), or the free text outside the panels; None for others."""
    if line.startswith("│") and line.endswith("│"):
        inner = line[1:-1]
        parts = list(re.finditer(r"\S+(?: \S+)*", inner))
        if not parts:
            return None
        last = parts[-1]
        return last.start(), last.group(), len(inner) - last.start() - 1
    if line.startswith(" ") and line.strip():
        return 1, line.strip(), width - 2
    return None


def ragged_breaks(text: str, width: int) -> list[str]:
    """Line pairs of one cell broken mid-sentence although there was room: the first ends with a lowercase word
    (maybe with a comma), the next starts with one, and that word would have fitted on the first line (rich wraps
    greedily, so only a line break in the source text leaves such a gap; one column of slack for measuring)."""
    found = []
    lines = text.splitlines()
    for a, b in itertools.pairwise(lines):
        ca, cb = _cell(a, width), _cell(b, width)
        if ca is None or cb is None or ca[0] != cb[0] or a.startswith("│") != b.startswith("│"):
            continue
        if a.startswith("│") and b[1 : 1 + cb[0]].strip():
            continue  # the next line starts a new row
        _, first, cell_width = ca
        word = cb[1].split()[0]
        if re.search(r"\b[a-z][\w'/-]*,?$", first) and re.match(r"[a-z]", word) \
                and len(first) + 1 + len(word) < cell_width:
            found.append(f"{first!r} / {cb[1]!r}")
    return found


def test_reflow_joins_the_lines_of_a_paragraph_but_not_examples():
    doc = "Sum.\n\n    a\n    b\n\n    Example: x\n    --y\n    Example: z\n"
    assert reflow(doc) == "Sum.\n\na b\n\nExample: x --y\nExample: z"


def test_ragged_break_detection():
    assert ragged_breaks(" Corrupt records are reported as rows and the\n scan goes on.\n", 200)
    assert not ragged_breaks(" Corrupt records are reported as rows and the\n scan goes on.\n", 50)
    row = "│ {:<8}{:<49}│\n".format
    assert ragged_breaks(row("info", "Show the store and its commitlog extent,") + row("", "every")
                         + row("", "consume queue's offset range."), 60)
    assert not ragged_breaks(row("info", "Show the store and its commitlog extent, every")
                             + row("", "consume queue's offset range."), 60)
    assert not ragged_breaks(row("--json", "One JSON object, written") + row("--help", "show this message."), 60)


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[" ".join(p) or "rmqtool" for p, _ in COMMANDS])
def test_help_reads_well_at_any_width(path, cmd):
    for width in WIDTHS:
        out = render(path, width)
        assert "[default: None]" not in out
        assert not re.search(r"\[default: -?\d{12,}\]", out), "a sentinel shown as a default"
        assert not ragged_breaks(out, width), f"ragged at {width} columns: {ragged_breaks(out, width)}"
        assert "Example:" in out
    wide = render(path, 200)
    for param in cmd.params:
        if isinstance(param.type, click.Choice):  # listed whole where there is room (narrow tables fold them)
            assert f"[{'|'.join(map(str, param.type.choices))}]" in wide
    for line in wide.splitlines():
        if line.strip().startswith("Example:"):
            for word in shlex.split(line.strip().removeprefix("Example:"))[1:]:
                if PATH_LIKE.search(word) and not word.startswith(("/tmp/", "-")) and word not in OFF_REPO:
                    assert (ROOT / word).exists(), f"example names {word}, which the repository lacks"


def _accepted() -> dict[tuple[str, ...], tuple[str, ...]]:
    """The words the code behind each word-valued option accepts, by command path and option."""
    from rmqtool.bench.layouts import LAYOUTS
    from rmqtool.bench.scan import MODES
    from rmqtool.bench.transfer import ROWS
    from rmqtool.engine.ha.slave import ACK_FLUSHED, ACK_WRITTEN
    from rmqtool.engine.message_store import FLUSH_ASYNC, FLUSH_SYNC
    from rmqtool.engine.producer import TRANSACTIONS
    from rmqtool.ops.export import EXPORT_FORMATS
    from rmqtool.ops.replication import ROLES
    from rmqtool.spark import export as spark_export
    from rmqtool.spark import load as spark_load
    from rmqtool.structures.commitlog.compression import CODECS
    from rmqtool.structures.commitlog.message import BODY_FORMATS

    flush = (FLUSH_SYNC, FLUSH_ASYNC)
    return {
        ("decode", "commitlog", "--body"): BODY_FORMATS, ("query", "--body"): BODY_FORMATS,
        ("append", "--compress"): CODECS, ("append", "--transaction"): tuple(TRANSACTIONS),
        ("append", "--flush"): flush, ("import", "--flush"): flush, ("export", "--format"): EXPORT_FORMATS,
        ("spark-load", "--format"): spark_load.FORMATS, ("spark-export", "--format"): spark_export.FORMATS,
        ("bench", "scan", "--mode"): MODES, ("bench", "scan", "--layout"): LAYOUTS,
        ("bench", "append", "--flush"): flush, ("bench", "import", "--format"): EXPORT_FORMATS,
        ("bench", "import", "--rows"): ROWS,
        ("bench", "export", "--format"): EXPORT_FORMATS, ("bench", "crash", "--flush"): flush,
        ("ha", "follow", "--ack"): (ACK_FLUSHED, ACK_WRITTEN), ("ha", "serve", "--role"): tuple(ROLES),
    }


def test_word_options_are_choices_of_what_the_code_accepts():
    commands = dict(COMMANDS)
    for (*path, name), words in _accepted().items():
        param = next(p for p in commands[tuple(path)].params if name in p.opts)
        assert isinstance(param.type, click.Choice), f"{' '.join(path)} {name} should be a click.Choice"
        assert sorted(param.type.choices) == sorted(words), f"{' '.join(path)} {name}"


CUT_WIDTHS = (60, 80, 200)
METAVAR_DOTS = re.compile(r"[A-Z\]]\.\.\.")  # `[ARGS]...`, `INPUTS...`: click's sign of many values, not a cut


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[" ".join(p) or "rmqtool" for p, _ in COMMANDS])
def test_help_cuts_an_option_name_or_a_word_with_an_ellipsis(path, cmd):
    names = [n for p in cmd.params if isinstance(p, click.Option) for n in (*p.opts, *p.secondary_opts)]
    for width in CUT_WIDTHS:
        out = render(path, width)
        cut = [line for line in out.splitlines() if "…" in line or "..." in METAVAR_DOTS.sub("", line)]
        assert not cut, f"cut at {width} columns: {cut}"
        for name in names:
            assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", out), f"{name} not whole at {width} columns"
