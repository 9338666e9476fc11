"""The whole page: every section of the picture, in reading order, inside one HTML document."""

from __future__ import annotations

from rmqtool.page import consumers, disk, index, segments, timeline, where
from rmqtool.page.glance import findings, glance
from rmqtool.page.style import CSP, SCRIPT, STYLE
from rmqtool.page.svg import esc
from rmqtool.page.table import section


def render(picture: dict) -> str:
    """The whole page of `picture`, as text."""
    info = picture.get("info") or {}
    tl = picture.get("timeline") or {}
    queues = picture.get("queues") or []
    markers = consumers.committed_markers(picture.get("consumers"))
    idx = picture.get("index") or []
    parts = [
        section("glance", "The store at a glance", glance(picture)),
        section("findings", "Findings", findings(picture.get("findings"))),
        section("timeline-messages", "Messages over time",
                timeline.timeline_chart(tl, "messages", markers) + timeline.uncounted_note(tl)
                + timeline.timeline_table(tl),
                "Messages stored per time bucket, stacked by topic; pale bands are buckets without traffic; "
                "triangles are consumer groups' committed positions."),
        section("timeline-bytes", "Bytes over time", timeline.timeline_chart(tl, "bytes"),
                "Bytes stored per time bucket, stacked by topic (the numbers are in the table above)."),
        section("bytes-topic", "Bytes per topic", where.topic_bytes(queues),
                "What each topic's queues hold between their min and max offsets."),
        section("bytes-queue", "Bytes per queue", where.queue_bytes(queues)),
        section("disk", "Disk use", disk.structure_bytes(info.get("disk")),
                "Bytes each structure's files take on disk: allocated blocks (as du counts) in the bars, apparent "
                "sizes (as ls -l counts) in the table; preallocated, mapped files differ."),
        section("disk-topics", "Commitlog by topic", disk.topic_share(info.get("disk")),
                "Each topic's records in the log (its queue entries' sizes), and the log's data no queue entry "
                "points at (records without one, segment-end blanks)."),
        section("segments", "Commitlog segments", segments.segment_map(picture.get("segments") or []),
                "One cell per segment in offset order, darker when fuller; holes striped grey, damage red."),
        section("consumers-lag", "Consumer lag", consumers.lag_chart(picture.get("consumers")),
                "Messages each group will still be served, per queue."),
        section("index-fill", "Index files", index.fill_chart(idx), "Entries per index file against its capacity."),
        section("index-chains", "Index slot chains", index.chain_chart(idx),
                "Used hash slots by the length of their chain: long chains make key lookups slow."),
    ]
    title = f"rmqtool report: {info.get('store', '')}"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{STYLE}</style></head>"
            f"<body><h1>{esc(title)}</h1>{''.join(parts)}<script>{SCRIPT}</script></body></html>\n")
