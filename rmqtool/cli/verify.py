"""`rmqtool verify STORE`: fsck, read-only; `rmqtool salvage STORE --out FILE`: every intact message."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output

CONFIG = typer.Option(None, "--config", help="broker.conf of the store.")


def verify(
    store: Path = typer.Argument(..., help="Store root."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document."),
    config: Path | None = CONFIG,
) -> None:
    """Check every record, consume-queue entry and index entry against each other (read-only).

    Records: length, magic, body CRC, physicalOffset, blank markers, segment sequence, garbage
    tail. Queues: each entry matches its record; each queued record has its entry. Index: each
    entry resolves to a record with that key; each key is reachable. Exit 0 clean (warnings
    allowed), 1 when problems were found.

    Example: [bold]rmqtool verify fixtures/store --config fixtures/broker.conf[/]
    """
    from rmqtool.store.verify import verify_path

    report = verify_path(store, config)
    if as_json:
        output.emit_json(report.to_json())
    else:
        t = output.table(None, ["severity", "file", "offset", "bytes", "reason"])
        for f in report.findings:
            t.add_row(f.severity, f.file, str(f.offset), str(f.bytes), f.reason)
        if report.findings:
            output.stdout.print(t)
        output.stdout.print(f"{report.messages} messages, {report.queue_entries} consume-queue entries, "
                            f"{report.index_entries} index entries: {report.problems} problems, "
                            f"{len(report.findings) - report.problems} warnings")
    if report.problems:
        raise typer.Exit(1)


def salvage(
    store: Path = typer.Argument(..., help="Store root."),
    out: Path = typer.Option(..., "--out", help="JSONL file for every intact message."),
    config: Path | None = CONFIG,
) -> None:
    """Export every intact message, reading past corrupt regions (each record names its own
    offset: the scan resynchronizes on the next one). Corrupt regions are listed on stderr.

    Example: [bold]rmqtool salvage /data/broken-store --out /tmp/salvaged.jsonl[/]
    """
    from rmqtool.ops.export import export_store
    from rmqtool.store.reader import open_reader

    summary = export_store(open_reader(store, config), out, "jsonl")
    output.stderr.print(f"{summary.messages} intact messages written to {out}; "
                        f"{summary.corrupt_regions} corrupt regions skipped")
