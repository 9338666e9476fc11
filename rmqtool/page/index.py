"""Index files: how full each is (entries over its capacity) as bars, and the slot-chain length histogram
over all files (how many used hash slots hold a chain of each length: long chains mean slow key lookups)."""

from __future__ import annotations

from rmqtool.page.bars import Bar, bars, percent
from rmqtool.page.svg import WIDTH, rect, scaled, svg, text
from rmqtool.page.table import details
from rmqtool.text import iso_time

HEIGHT = 160


def fill_chart(index: list[dict]) -> str:
    chart = bars("index-fill", [Bar(f["file"], f["indexCount"], f"{f['indexCount']} of {f['maxIndexNum']} "
                                    f"({percent(f['indexCount'], f['maxIndexNum'])})",
                                    data={"max": f["maxIndexNum"]}) for f in index])
    return chart + details("index-fill", ["file", "entries", "capacity", "fill", "hash slots", "begin (UTC)",
                                          "end (UTC)"],
                           [[f["file"], f["indexCount"], f["maxIndexNum"], percent(f["indexCount"], f["maxIndexNum"]),
                             f["hashSlotNum"], iso_time(f["beginTimestamp"]), iso_time(f["endTimestamp"])]
                            for f in index])


def histogram(index: list[dict]) -> dict[int, int]:
    """Chain length -> used slots with a chain that long, summed over the files."""
    out: dict[int, int] = {}
    for f in index:
        for length, slots in (f.get("chainLengths") or {}).items():
            out[int(length)] = out.get(int(length), 0) + slots
    return dict(sorted(out.items()))


def chain_chart(index: list[dict]) -> str:
    counts = histogram(index)
    if not counts:
        body = svg("index-chains", 30, text(8, 20, "no used hash slot", "empty"), data_lengths=0)
    else:
        largest, width = max(counts.values()), (WIDTH - 20) / len(counts)
        parts = []
        for i, (length, slots) in enumerate(counts.items()):
            h = scaled(slots, largest, HEIGHT)
            parts.append(rect(10 + i * width + 1, HEIGHT - h + 14, max(width - 2, 1), h, "bar",
                              f"chains of {length}: {slots} slots", data_length=length, data_slots=slots))
            parts.append(text(10 + (i + 0.5) * width, HEIGHT + 28, length, "axis", anchor="middle"))
        parts.append(text(10, 10, f"{largest} slots", "axis"))
        body = svg("index-chains", HEIGHT + 34, "".join(parts), data_lengths=len(counts), data_largest=largest)
    return body + details("index-chains", ["chain length", "used slots"], [[k, v] for k, v in counts.items()])
