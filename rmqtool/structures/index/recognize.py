"""Is this file an index file? A cheap check of its header, made before it is decoded."""

from __future__ import annotations

from rmqtool.structures import index
from rmqtool.structures.plausible import plausible_time


def index_file_refusal(head: bytes, size: int) -> str | None:
    """None when the file starts with a header of two times, two physical offsets and two counts."""
    if size < index.HEADER_LEN:
        return f"{size} bytes is shorter than an index header ({index.HEADER_LEN} bytes)"
    begin_ts, end_ts, begin_off, end_off, slots, count = index.HEADER.codec.unpack_from(head, 0)
    if not (plausible_time(begin_ts) and plausible_time(end_ts)):
        return f"its header times ({begin_ts}, {end_ts}) are not epoch milliseconds"
    if begin_off < 0 or end_off < 0 or slots < 0 or count < 0:
        return f"its header holds negative offsets or counts ({begin_off}, {end_off}, {slots}, {count})"
    return None
