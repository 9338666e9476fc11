"""The pieces every chart is drawn from: escaped text and attributes, SVG elements, human numbers.

Every string that reaches the page goes through `esc` (the store's strings are untrusted: a topic may be
named `<script>`), in element text and in attribute values alike; numbers are written as they are.
"""

from __future__ import annotations

import html

from rmqtool.text import printable

WIDTH = 960  # every chart's drawing width, in px (the page scales it down on a narrow window)


def esc(value: object) -> str:
    """`value` as HTML text or a quoted attribute value: control characters as their escapes, `<>&"'` as
    entities."""
    return html.escape(printable(value), quote=True)


def attrs(values: dict[str, object]) -> str:
    """` k="v"` for each value that is not None (`data_x` is written `data-x`), escaped."""
    return "".join(f' {k.replace("_", "-")}="{esc(v)}"' for k, v in values.items() if v is not None)


def num(value: float, digits: int = 2) -> str:
    """A coordinate: at most `digits` decimals, no trailing zeros ("12", "3.5")."""
    out = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if out == "-0" else out


def rect(x: float, y: float, w: float, h: float, cls: str, title: str | None = None, **data: object) -> str:
    """One `<rect>` with its class, its numbers as data attributes and a tooltip."""
    tip = f"<title>{esc(title)}</title>" if title else ""
    return (f'<rect x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}"{attrs({"class": cls, **data})}'
            + (f">{tip}</rect>" if tip else "/>"))


def text(x: float, y: float, value: object, cls: str = "", anchor: str = "start") -> str:
    return f'<text x="{num(x)}" y="{num(y)}" text-anchor="{anchor}"{attrs({"class": cls or None})}>{esc(value)}</text>'


def svg(chart: str, height: float, body: str, **data: object) -> str:
    """The chart's `<svg>`: `data-chart` names it (the page's script marks it `data-rendered` once laid out)."""
    h = num(height)
    return (f'<svg class="chart" viewBox="0 0 {WIDTH} {h}" width="{WIDTH}" height="{h}" role="img"'
            f'{attrs({"data_chart": chart, **data})}>{body}</svg>')


def short(label: str, most: int = 36) -> str:
    """A label cut to `most` characters with an ellipsis (the full text stays in the tooltip and the table)."""
    return label if len(label) <= most else label[: most - 1] + "\u2026"


def human_bytes(n: int) -> str:
    """1536 -> "1.5 KiB"."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def scaled(value: float, most: float, px: float) -> float:
    """`value` of `most` as a length of at most `px` (0 when `most` is 0)."""
    return value / most * px if most else 0.0
