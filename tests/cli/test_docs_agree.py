"""What the README and docs/commands.md say agrees with the code: every exit code, how spark-export splits."""

from __future__ import annotations

import re
from pathlib import Path

import typer
from click.testing import CliRunner

from rmqtool import errors
from rmqtool.cli.app import app

ROOT = Path(__file__).resolve().parents[2]


def _paragraph(text: str, start: str) -> str:
    """The paragraph of `text` that begins with `start`, on one line."""
    (para,) = [p for p in text.split("\n\n") if p.startswith(start)]
    return " ".join(para.split())


def test_readme_exit_code_line_leaves_out_a_code_of_errors_py():
    codes = {v for k, v in vars(errors).items() if k.startswith("EXIT_")}
    line = _paragraph((ROOT / "README.md").read_text(), "Exit codes:")
    assert {int(c) for c in re.findall(r"(?:: |; )(\d+) ", line)} == codes == {0, 1, 2, 3, 130, 143}


def test_spark_export_help_and_commands_md_disagree_on_what_a_task_reads():
    result = CliRunner().invoke(typer.main.get_command(app), ["spark-export", "--help"], prog_name="rmqtool",
                                env={"COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    help_text = " ".join(result.output.replace("│", " ").split())
    section = (ROOT / "docs" / "commands.md").read_text().split("## `rmqtool spark-export")[1]
    doc = " ".join(section.split("\n", 1)[1].strip().split("\n\n")[0].split())
    for text in (help_text.lower(), doc.lower()):
        assert "one spark task per byte range of the log" in text
        assert "starting on a record boundary" in text
        assert "task per commitlog segment" not in text
