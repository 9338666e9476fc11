"""Horizontal bars, one per row, longest first: the shape of "bytes per topic", "lag per queue", "fill per file".

A chart shows at most `TOP` rows (the rest summed in one row `other (N)`), so the page stays small; its
table lists every row. Each bar is a `<rect class="bar">` whose width is its value over the largest, with
`data-label` and `data-value` (and any data the caller passes) so the numbers read back from the page.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmqtool.page.svg import WIDTH, num, rect, scaled, short, svg, text

TOP = 40
ROW = 18
LABEL = 300  # px left of the bars for their labels
VALUE = 130  # px right of the bars for their numbers


@dataclass
class Bar:
    label: str
    value: int
    shown: str = ""  # the number as a person reads it beside the bar ("1.5 KiB"); the value when empty
    data: dict[str, object] = field(default_factory=dict)


def top(rows: list[Bar], most: int = TOP) -> list[Bar]:
    """The `most` largest rows (ties in the given order), the rest as one row `other (N)`."""
    ranked = sorted(rows, key=lambda b: -b.value)
    if len(ranked) <= most:
        return ranked
    rest = ranked[most - 1:]
    other = Bar(f"other ({len(rest)})", sum(b.value for b in rest), data={"other": len(rest)})
    return [*ranked[: most - 1], other]


def bars(chart: str, rows: list[Bar], fmt=str, most: int = TOP) -> str:
    """The chart of `rows` (an empty chart says "nothing to show")."""
    shown = top(rows, most)
    if not shown:
        return svg(chart, ROW * 2, text(8, ROW, "nothing to show", "empty"), data_rows=0)
    largest = max(b.value for b in shown)
    span = WIDTH - LABEL - VALUE
    body = []
    for i, b in enumerate(shown):
        y = i * ROW
        body.append(text(LABEL - 6, y + ROW - 5, short(b.label), "label", anchor="end"))
        body.append(rect(LABEL, y + 2, scaled(b.value, largest, span), ROW - 4, "bar", f"{b.label}: {fmt(b.value)}",
                         data_label=b.label, data_value=b.value, **{f"data_{k}": v for k, v in b.data.items()}))
        body.append(text(LABEL + scaled(b.value, largest, span) + 4, y + ROW - 5, b.shown or fmt(b.value), "value"))
    return svg(chart, len(shown) * ROW + 4, "".join(body), data_rows=len(shown), data_largest=largest)


def percent(part: int, whole: int) -> str:
    """"37.5%" of `whole` ("-" when it is 0)."""
    return f"{num(100 * part / whole)}%" if whole else "-"

