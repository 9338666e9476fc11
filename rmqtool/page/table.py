"""A chart's numbers as a collapsed table under it, exact and copyable."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rmqtool.page.svg import esc


def details(chart: str, headers: Sequence[str], rows: Iterable[Sequence[object]], summary: str = "the numbers") -> str:
    """`<details>` holding a `<table data-table=chart>`: one header row, then the rows (every cell escaped)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{'' if c is None else esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (f'<details><summary>{esc(summary)}</summary><table data-table="{esc(chart)}"><thead><tr>{head}</tr>'
            f"</thead><tbody>{body}</tbody></table></details>")


def section(chart: str, title: str, body: str, note: str = "") -> str:
    """One chart's block: its heading, what it tells (`note`), the chart and its table."""
    para = f"<p class=\"note\">{esc(note)}</p>" if note else ""
    return f'<section id="{esc(chart)}"><h2>{esc(title)}</h2>{para}{body}</section>'
