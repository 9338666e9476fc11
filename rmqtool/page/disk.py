"""Disk use: the bytes each structure's files take on disk (allocated, as `du` counts, the bar; apparent, as
`ls -l` counts, beside it in the table), and each topic's share of the commitlog's records as bars, with the
log's data no queue entry points at as its own row."""

from __future__ import annotations

from rmqtool.page.bars import Bar, bars, percent
from rmqtool.page.svg import human_bytes
from rmqtool.page.table import details

NO_TOPIC = "no queue entry"  # the row of the log's data no topic accounts for


def structure_bytes(disk: dict | None) -> str:
    if not disk:
        return '<p class="empty" data-chart-absent="disk">no disk use in this picture</p>'
    parts = disk.get("parts") or []
    chart = bars("disk", [Bar(p["name"], p["allocatedBytes"], data={"apparent": p["apparentBytes"],
                                                                     "files": p["files"], "owner": p["owner"]})
                          for p in parts], human_bytes)
    rows = [[p["name"], p["owner"], p["files"], p["allocatedBytes"], p["apparentBytes"]] for p in parts]
    rows.append(["total", "", disk["files"], disk["allocatedBytes"], disk["apparentBytes"]])
    return chart + details("disk", ["files of", "owner", "files", "allocated bytes (du)", "apparent bytes (ls -l)"],
                           rows)


def topic_share(disk: dict | None) -> str:
    share = (disk or {}).get("commitlogTopics")
    if not share:
        return '<p class="empty" data-chart-absent="disk-topics">no commitlog share in this picture</p>'
    data = share["logDataBytes"]
    rows = [Bar(t["topic"], t["bytes"], data={"messages": t["messages"]}) for t in share["topics"]]
    if share["unattributedBytes"]:
        rows.append(Bar(NO_TOPIC, share["unattributedBytes"], data={"unattributed": 1}))
    chart = bars("disk-topics", rows, human_bytes)
    return chart + details("disk-topics", ["topic", "messages", "bytes", "share of the log's data"],
                           [[b.label, b.data.get("messages", ""), b.value, percent(b.value, data)] for b in rows])
