"""`rmqtool report STORE`: the store as one HTML page to open offline (read-only)."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output, screen


def report(
    store: Path = typer.Argument(..., help="Store root.", show_default=False),
    out: Path | None = typer.Option(None, "--out", help="The page to write (replaced if it is a file); default: "
                                    "./<store folder's name>-report.html in the working folder.", show_default=False),
    config: Path | None = typer.Option(None, "--config", help="broker.conf of the store.", show_default=False),
    verify: bool = typer.Option(False, "--verify", help="Also check every structure (a full scan, as `verify`): "
                                "findings and damaged ranges on the page."),
    as_json: bool = typer.Option(False, "--json", help="What was written, as one JSON document."),
) -> None:
    """Write one self-contained HTML page of a store, for a person to open offline or attach to a ticket.

    The store at a glance (what `info` says), the timeline of messages and bytes stacked by topic with its
    gaps, where the bytes are (per topic, per queue, a map of the commitlog segments with holes and
    damage), each consumer group's lag and committed position, the index files' fill and slot chains, and
    with --verify the findings. Every chart has its numbers in a table under it. The page loads nothing
    from anywhere (no script, style or font from outside it). Prints the page's path and size.

    Example: [bold]rmqtool report fixtures/store --out /tmp/store-report.html[/]
    """
    from rmqtool.ops.picture import STAGES
    from rmqtool.ops.report_page import default_out, write_report

    labels = [s for s in STAGES if verify or s != "verify"]
    with output.stages(labels, {"info": "queues", "consumers": "groups", "index": "index files",
                                "verify": "problems"}) as progress:
        done = write_report(store, out if out is not None else default_out(store), config, verify=verify,
                            progress=progress)
    if as_json:
        output.emit_json(done)
    else:
        output.stdout.print(f"{screen.terminal_text(done['out'])}: {done['bytes']} bytes", markup=False,
                            highlight=False)
