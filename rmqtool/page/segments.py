"""The segment map: one cell per commitlog segment, in offset order, shaded by how full it is, with its
holes (missing bytes) and damaged ranges (findings, when verified) drawn as stripes across it.

A cell is one `<rect class="cell">` with `data-name` (its start offset) and `data-used`, and `data-size`
where it differs from the chart's `data-segment-size` (its fill opacity grows with used/size, left out
when full); a hole is a `<rect class="hole">` and a damaged range a
`<rect class="damaged">` with `data-lo`, `data-hi` (absolute offsets) and `data-kind`, placed inside the
cell at the range's share of the segment. Ten thousand segments stay ten thousand small rects.
"""

from __future__ import annotations

from rmqtool.page.bars import percent
from rmqtool.page.svg import WIDTH, esc, num, rect, scaled, svg, text
from rmqtool.page.table import details

COLUMNS = 40
GAP = 2


def _stripes(cls: str, ranges: list, seg: dict, x: float, y: float, w: float, h: float) -> list[str]:
    out = []
    start, size = seg["start"], seg["size"] or 1
    for r in ranges:
        lo, hi = max(r[0], start), min(r[1], start + size)
        if hi <= lo:
            continue
        sx = x + scaled(lo - start, size, w)
        kind = r[2] if len(r) > 2 else None
        out.append(rect(sx, y, max(scaled(hi - lo, size, w), 1.0), h, cls,
                        f"{seg['name']}: {kind or 'missing'} {r[0]} .. {r[1]}", data_lo=r[0], data_hi=r[1],
                        data_kind=kind))
    return out


def segment_map(segments: list[dict]) -> str:
    if not segments:
        return svg("segments", 30, text(8, 20, "no commitlog segment", "empty"), data_segments=0) + _table([])
    cell = WIDTH // COLUMNS
    w, h = cell - GAP, min(cell - GAP, 18)
    common = max({s["size"] for s in segments}, key=[s["size"] for s in segments].count)
    body = []
    for i, seg in enumerate(segments):
        x, y = GAP + (i % COLUMNS) * cell, GAP + (i // COLUMNS) * (h + GAP)
        fill = seg["used"] / seg["size"] if seg["size"] else 0.0
        shade = "" if fill >= 1 else f' fill-opacity="{num(0.12 + 0.88 * fill)}"'
        size = "" if seg["size"] == common else f' data-size="{seg["size"]}"'
        body.append(f'<rect x="{x}" y="{y}" width="{w}" height="{h}" class="cell"{shade} '
                    f'data-name="{esc(seg["name"])}" data-used="{seg["used"]}"{size}/>')
        body.extend(_stripes("hole", seg.get("holes") or [], seg, x, y, w, h))
        body.extend(_stripes("damaged", seg.get("damaged") or [], seg, x, y, w, h))
    rows = -(-len(segments) // COLUMNS)
    return svg("segments", rows * (h + GAP) + GAP, "".join(body), data_segments=len(segments),
               data_segment_size=common) + _table(segments)


def _table(segments: list[dict]) -> str:
    return details("segments", ["segment", "size", "used", "fill", "holes", "damaged"], [
        [s["name"], s["size"], s["used"], percent(s["used"], s["size"]),
         "; ".join(f"{lo} .. {hi}" for lo, hi in s.get("holes") or []),
         "; ".join(f"{d[0]} .. {d[1]} {d[2]}" for d in s.get("damaged") or [])] for s in segments])
