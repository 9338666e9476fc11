"""Every command the README and docs/*.md show runs as written (tests/docsamples.py finds them and builds the
stores their placeholders stand for), exits as its sample says, and prints what its sample shows, times, paths
and numbers aside; the README's lists of commands are the commands' --help."""

from __future__ import annotations

import re

import click
import pytest
import typer
from click.testing import CliRunner
from docsamples import PARSE_ONLY, ROOT, Runner, mismatch, parse, samples, shown

from rmqtool.cli.app import app

ALL = samples()


@pytest.mark.parametrize("doc", sorted({s.doc for s in ALL}))
def test_every_documented_command_runs_as_written(doc, golden_basic, tmp_path):
    """Each command of `doc` in order; PARSE_ONLY ones (ha, bench, spark-load, spark-export) are parsed only."""
    runner = Runner(doc, golden_basic.parent, tmp_path)
    failures = []
    for sample in [s for s in ALL if s.doc == doc]:
        where = f"{sample.doc}:{sample.line}: rmqtool {' '.join(sample.argv)}"
        try:
            out = runner.run(sample)
        except click.ClickException as e:  # a PARSE_ONLY command that does not parse
            failures.append(f"{where}: does not parse: {e}")
            continue
        if out is None:
            continue
        if out.returncode != sample.exit_code:
            failures.append(f"{where}: exit {out.returncode}, the doc says {sample.exit_code}: {out.stderr.strip()}")
        elif sample.console and (why := mismatch(sample, shown(sample, out))):
            failures.append(f"{where}: {why}")
    assert not failures, "\n".join(failures)


def test_a_sample_with_another_first_line_is_told_apart():
    sample = next(s for s in ALL if s.doc == "docs/commands.md" and s.console and s.output and "--to-time" in s.argv)
    assert mismatch(sample, sample.output) is None
    assert "first line" in mismatch(sample, ["rmqtool: warning: " + sample.output[0]])


def test_a_parse_only_command_with_a_misspelled_option_does_not_parse():
    assert {s.argv[0] for s in ALL} >= set(PARSE_ONLY)
    parse(["bench", "scan", "--messages", "1000000", "--mode", "full"])
    with pytest.raises(click.NoSuchOption, match="--mesages"):
        parse(["bench", "scan", "--mesages", "1000000"])
    with pytest.raises(click.BadParameter, match="'fast' is not one of"):
        parse(["bench", "scan", "--mode", "fast"])


def _help_commands(*group: str) -> list[str]:
    result = CliRunner().invoke(typer.main.get_command(app), [*group, "--help"], prog_name="rmqtool",
                                env={"COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    section = result.output.split("Commands")[1]
    return sorted(m.group(1) for m in re.finditer(r"^│ (\S+)\s{2,}", section, re.M))


def test_readme_bench_list_names_exactly_the_bench_commands():
    (listed,) = re.findall(r"`rmqtool bench ([\w|\\-]+)`", (ROOT / "README.md").read_text())
    assert sorted(listed.replace("\\", "").split("|")) == _help_commands("bench")


def test_readme_decode_table_names_exactly_the_decode_commands():
    rows = re.findall(r"^\| `rmqtool decode (\w+)", (ROOT / "README.md").read_text(), re.M)
    assert sorted(set(rows)) == _help_commands("decode")
