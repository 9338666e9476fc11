"""`info`'s timeline in a terminal: one line per bucket (its start in UTC, a bar scaled to the busiest bucket,
the message count), neighbouring buckets merged so that at most MAX_LINES lines are drawn."""

from __future__ import annotations

from rmqtool.text import duration, iso_time

MAX_LINES = 24
BAR = "█"


def merged(timeline: dict, most: int = MAX_LINES) -> tuple[list[int], list[int], int]:
    """(bucket starts, message counts, bucket length in ms) with every k neighbouring buckets summed, k the
    least that leaves at most `most` buckets."""
    counts, edges = timeline["messages"], timeline["edgesMs"]
    k = -(-len(counts) // most) if counts else 1
    return ([edges[i] for i in range(0, len(counts), k)], [sum(counts[i : i + k]) for i in range(0, len(counts), k)],
            timeline["bucketMs"] * k)


def chart_lines(timeline: dict, width: int) -> list[str]:
    """The chart as lines at most `width` columns wide (a heading first); none for an empty timeline."""
    if not timeline["messages"]:
        return []
    starts, counts, bucket = merged(timeline)
    labels = [_label(ms, bucket) for ms in starts]
    numbers = [str(c) for c in counts]
    label_w, number_w = max(map(len, labels)), max(map(len, numbers))
    room = max(width - label_w - number_w - 2, 1)
    top = max(counts) or 1
    lines = [f"timeline: messages per {duration(bucket)} (UTC)"[:width]]
    for label, count, number in zip(labels, counts, numbers, strict=True):
        bar = BAR * (max(1, round(count * room / top)) if count else 0)
        lines.append(f"{label:<{label_w}} {bar:<{room}} {number:>{number_w}}")
    missing = (timeline.get("uncounted") or {}).get("messages")
    if missing:
        lines.append(f"not counted: {missing} messages whose records the log does not hold"[:width])
    return lines


def _label(ms: int, bucket: int) -> str:
    """A bucket's start: to the second, or to the minute when buckets are whole minutes."""
    text = iso_time(ms)
    if len(text) != 24:  # no calendar holds it: the number itself
        return text
    return text[:16] + "Z" if bucket % 60_000 == 0 else text[:19] + "Z"
