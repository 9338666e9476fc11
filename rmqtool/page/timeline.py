"""The timeline: messages (or bytes) per time bucket, stacked by topic, on an axis of UTC times.

Each bucket is a `<g class="bucket">` with `data-start-ms`, `data-end-ms`, `data-messages` and
`data-bytes`; inside it one `<rect class="cK">` per topic with traffic in it (`data-value`; the legend's
item `data-k="K"` names the topic), stacked from the baseline, the bucket's height its total over the
largest bucket's. The `TOPICS` largest topics have their own colour, the others are summed as `other`
(the last colour). A bucket without traffic (a gap) has no topic rects but a pale full-height
`<rect class="gap">` so it stands out. Consumer groups' committed positions are markers
(`<g class="committed">`, `data-group`, `data-committed-ms`) on the time axis.
"""

from __future__ import annotations

from rmqtool.page.svg import WIDTH, esc, human_bytes, num, rect, scaled, short, svg, text
from rmqtool.page.table import details
from rmqtool.text import iso_time

TOPICS = 10
OTHER = "other"
HEIGHT = 220  # px of the bars
LEFT = 70  # px for the value axis
AXIS = 40  # px under the bars for the time labels
MARKER_ROW = 16  # px per consumer group marker row
TICKS = 4  # labels of about 140 px, a quarter of the axis apart, never overlap


def series(timeline: dict, metric: str) -> list[tuple[str, list[int]]]:
    """(topic, per-bucket values) of the `TOPICS` largest topics, then `other` (the rest summed) if any."""
    topics = timeline.get("topics") or []
    out = [(t["topic"], list(t[metric])) for t in topics[:TOPICS]]
    rest = topics[TOPICS:]
    if rest:
        out.append((OTHER, [sum(col) for col in zip(*(t[metric] for t in rest), strict=True)]))
    return out


def timeline_chart(timeline: dict, metric: str, markers: list[tuple[str, int]] = ()) -> str:
    """The stacked bars of `metric` ("messages" or "bytes"), with `markers` (group, committed store ms)."""
    chart = f"timeline-{metric}"
    n = len(timeline.get("messages") or [])
    if n == 0:
        return svg(chart, 30, text(8, 20, "no messages in the queues: nothing to draw", "empty"), data_buckets=0)
    edges, totals = timeline["edgesMs"], timeline[metric]
    largest = max(totals) or 1
    span = WIDTH - LEFT - 10
    width = span / n
    body = [text(LEFT - 6, 12, human_bytes(largest) if metric == "bytes" else largest, "axis", anchor="end"),
            text(LEFT - 6, HEIGHT, 0, "axis", anchor="end")]
    stacks = series(timeline, metric)
    for i in range(n):
        x = LEFT + i * width
        inner = [f"<title>{iso_time(edges[i])}: {timeline['messages'][i]} messages, "
                 f"{human_bytes(timeline['bytes'][i])}</title>"] if metric == "messages" else []
        if totals[i] == 0:
            inner.append(rect(x, 0, width, HEIGHT, "gap"))
        y = HEIGHT
        for k, (_, values) in enumerate(stacks):
            if values[i]:
                h = scaled(values[i], largest, HEIGHT)
                y -= h
                inner.append(f'<rect x="{num(x, 1)}" y="{num(y, 1)}" width="{num(width, 1)}" height="{num(h, 1)}" '
                             f'class="c{k}" data-value="{values[i]}"/>')
        body.append(f'<g class="bucket" data-start-ms="{edges[i]}" data-end-ms="{edges[i + 1]}" '
                    f'data-messages="{timeline["messages"][i]}" data-bytes="{timeline["bytes"][i]}">'
                    + "".join(inner) + "</g>")
    body.append(f'<line class="baseline" x1="{LEFT}" y1="{HEIGHT}" x2="{num(LEFT + span)}" y2="{HEIGHT}"/>')
    for t in sorted({round(j * n / TICKS) for j in range(TICKS + 1)}):
        x = LEFT + t * width
        body.append(f'<g class="tick" data-ms="{edges[t]}"><line x1="{num(x)}" y1="{HEIGHT}" x2="{num(x)}" '
                    f'y2="{HEIGHT + 5}"/>' + text(x, HEIGHT + 18, iso_time(edges[t]), "axis",
                                                  anchor="start" if t == 0 else "end" if t == n else "middle") + "</g>")
    body.extend(_markers(markers, edges, LEFT, span))
    legend = _legend(stacks)
    height = HEIGHT + AXIS + MARKER_ROW * len(markers)
    return svg(chart, height, "".join(body), data_buckets=n, data_largest=largest) + legend


def _markers(markers: list[tuple[str, int]], edges: list[int], left: float, span: float) -> list[str]:
    """Each group's committed position on the time axis: a triangle and its name, one row per group."""
    out = []
    lo, hi = edges[0], edges[-1]
    for row, (group, ms) in enumerate(markers):
        x = left + scaled(min(max(ms, lo), hi) - lo, hi - lo, span)
        y = HEIGHT + AXIS + row * MARKER_ROW
        out.append(f'<g class="committed" data-group="{esc(group)}" data-committed-ms="{ms}">'
                   f'<title>{esc(group)}: committed up to {esc(iso_time(ms))}</title>'
                   f'<path d="M{num(x)} {y - 12}l-5 8h10z"/>'
                   + text(x + (8 if x < left + span / 2 else -8), y - 4, short(group, 48), "marker",
                          anchor="start" if x < left + span / 2 else "end") + "</g>")
    return out


def _legend(stacks: list[tuple[str, list[int]]]) -> str:
    items = "".join(f'<li data-k="{k}" data-topic="{esc(t)}"><span class="swatch c{k}"></span>{esc(short(t, 48))}</li>'
                    for k, (t, _) in enumerate(stacks))
    return f'<ul class="legend">{items}</ul>'


def uncounted_note(timeline: dict) -> str:
    """What the timeline cannot count: queue entries whose records the log does not hold, per stretch of the log
    (`data-uncounted` the messages, each range a `<li data-from data-to data-messages>`); nothing when none."""
    missing = timeline.get("uncounted") or {}
    if not missing.get("messages"):
        return ""
    items = "".join(
        f'<li data-from="{r["from"]}" data-to="{"" if r["to"] is None else r["to"]}" data-messages="{r["messages"]}">'
        + esc(f"{r['messages']} messages ({human_bytes(r['bytes'])}) point into "
              + (f"{r['from']} .. {r['to']}, which no segment holds" if r["to"] is not None
                 else f"the log past its end at {r['from']}")) + "</li>" for r in missing.get("ranges") or [])
    return (f'<div class="bad" data-uncounted="{missing["messages"]}"><p>Not counted: {missing["messages"]} '
            f"messages whose records the log does not hold (their queue entries remain).</p><ul>{items}</ul></div>")


def timeline_table(timeline: dict) -> str:
    """Every bucket: its start and end, messages and bytes, and each shown topic's messages."""
    n = len(timeline.get("messages") or [])
    stacks = series(timeline, "messages")
    edges = timeline.get("edgesMs") or []
    rows = [[iso_time(edges[i]), iso_time(edges[i + 1]), timeline["messages"][i], timeline["bytes"][i],
             *(values[i] for _, values in stacks)] for i in range(n)]
    return details("timeline", ["from (UTC)", "to (UTC)", "messages", "bytes", *(t for t, _ in stacks)], rows)
