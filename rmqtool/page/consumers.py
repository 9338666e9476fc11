"""Consumers: each group's lag (messages still to serve) per queue as bars, and where each group has
committed to, as a marker on the timeline's time axis (its oldest committed position: the queue it is
furthest behind on)."""

from __future__ import annotations

from rmqtool.page.bars import Bar, bars
from rmqtool.page.table import details


def committed_markers(consumers: dict | None) -> list[tuple[str, int]]:
    """(group, the earliest `committedStoreMs` of its queues) for every group that has one."""
    out = []
    for g in (consumers or {}).get("groups") or []:
        times = [q["committedStoreMs"] for q in g.get("queues") or [] if q.get("committedStoreMs") is not None]
        if times:
            out.append((g["group"], min(times)))
    return out


def lag_chart(consumers: dict | None) -> str:
    if consumers is None:
        return '<p class="empty" data-chart-absent="consumers">no consumer offsets in this store ' \
               "(config/consumerOffset.json)</p>"
    rows = [q for g in consumers.get("groups") or [] for q in g.get("queues") or []]
    chart = bars("consumers-lag", [Bar(f"{q['group']} \u00b7 {q['topic']} / {q['queueId']}", q["lag"],
                                       data={"group": q["group"], "topic": q["topic"], "queue": q["queueId"]})
                                   for q in rows if q.get("lag") is not None])
    return chart + details("consumers-lag", ["group", "topic", "queue", "committed offset", "min offset",
                                             "max offset", "lag", "lag ms", "state", "committed store ms"],
                           [[q["group"], q["topic"], q["queueId"], q.get("committedOffset"), q.get("minOffset"),
                             q.get("maxOffset"), q.get("lag"), q.get("lagMs"), q.get("state"),
                             q.get("committedStoreMs")] for q in rows])
