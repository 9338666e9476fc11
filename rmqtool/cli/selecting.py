"""The options that select records of a log (`decode commitlog`, `export`): topic, queue, tag, key and a
store-time window, all of them together; parsed here, applied by `structures.commitlog.selection`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from rmqtool.cli.times import TIME_HELP, time_window, unit_needs_a_time

if TYPE_CHECKING:  # start-up: numpy and numba load with the first scan, not with the command's options
    from rmqtool.structures.commitlog.selection import Selection

TOPIC = typer.Option(None, "--topic", help="Only messages of this topic.", show_default=False)
QUEUE = typer.Option(None, "--queue", min=0, help="Only messages of this queue id (the queueId stored in each "
                     "record; with --topic: that topic's queue).", show_default=False)
TAG = typer.Option(None, "--tag", help="Only messages whose TAGS property is this tag.", show_default=False)
KEY = typer.Option(None, "--key", help="Only messages carrying this key: a word of KEYS (split at spaces, as the "
                   "broker indexes them) or the UNIQ_KEY.", show_default=False)
BEGIN = typer.Option(None, "--begin", help=f"Only messages stored at or after this time ({TIME_HELP}).",
                     show_default=False)
END = typer.Option(None, "--end", help=f"Only messages stored at or before this time ({TIME_HELP}).",
                   show_default=False)


def selection_of(topic: str | None = None, queue: int | None = None, tag: str | None = None,
                 key: str | None = None, begin: str | None = None, end: str | None = None,
                 time_unit: str | None = None) -> Selection:
    """The selection the options ask for (times read by the typed-time rule); a filter no record could pass is
    refused (exit 2)."""
    from rmqtool.structures.commitlog.selection import Selection

    unit_needs_a_time(time_unit, begin=begin, end=end)
    begin_ms, end_ms = time_window(begin, end, time_unit)
    return Selection(topic=topic, queue=queue, begin=begin_ms, end=end_ms, tag=tag, key=key)
