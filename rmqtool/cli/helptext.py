"""Help text that re-flows to the terminal's width.

Docstrings are wrapped at the source's line length, and typer's rich markup mode keeps those line breaks
(in the command lists and in every paragraph after the first), so help came out ragged. `reflow_app` joins
each paragraph of every command's and group's help into one line before click sees it; rich then wraps it
to the terminal. Each `Example:` starts a line of its own.
"""

from __future__ import annotations

import inspect
import re

import typer


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
    """Re-flow the help of `app`, of its commands (given as help= or as the docstring) and of its sub-apps."""
    if isinstance(app.info.help, str):
        app.info.help = reflow(app.info.help)
    for command in app.registered_commands:
        given = command.help if isinstance(command.help, str) else None
        command.help = reflow(given if given is not None else inspect.getdoc(command.callback))
    for group in app.registered_groups:
        if isinstance(group.help, str):
            group.help = reflow(group.help)
        if group.typer_instance is not None:
            reflow_app(group.typer_instance)
