"""`rmqtool verify STORE`: fsck, read-only; `rmqtool salvage STORE --out FILE`: every intact message."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output, screen
from rmqtool.errors import EXIT_PROBLEM

CONFIG = typer.Option(None, "--config", help="broker.conf of the store.", show_default=False)
ALL = typer.Option(False, "--all", help="Every finding, one row each, instead of one row per group of alike findings "
                   "(a long list is otherwise cut to 100 of one kind per file and one \"N more like\" row).")


def verify(
    store: Path = typer.Argument(..., help="Store root, or one store file to check alone (a commitlog segment, "
                                 "consume-queue file, index file or checkpoint).", show_default=False),
    as_json: bool = typer.Option(False, "--json", help="One JSON document (the findings listed, their groups, and "
                                 "totals per kind that count every finding)."),
    show_all: bool = ALL,
    config: Path | None = CONFIG,
) -> None:
    """Check every record, consume-queue entry and index entry against each other (read-only).

    Records: length, magic, body CRC, physicalOffset, blank markers, segment sequence, garbage
    tail. Queues: each entry matches its record; each queued record has its entry. Index: each
    entry resolves to a record with that key; each key is reachable. One file given instead of a
    store is checked alone, by its own rules (a segment whose name is not an offset starts where
    its first record says). Consecutive findings of one kind on one file are shown as one row
    (--all: every row). Exit 0 clean (warnings allowed), 1 when problems were found.

    Example: [bold]rmqtool verify fixtures/store --config fixtures/broker.conf[/]
    """
    from rmqtool.files.paths import StorePaths
    from rmqtool.ops.verify import store_root_of, verify_path
    from rmqtool.report import group_findings

    root = store_root_of(store)
    if root is not None:
        output.warn_if_locked(StorePaths(root))
    report = verify_path(store, config, every=show_all)
    for text in report.notes:
        output.note(text)
    if as_json:
        output.emit_json({**report.to_json(), "groups": [g.to_json() for g in group_findings(report.findings)]})
    else:
        found = output.findings_table(report.findings, show_all)
        if found is not None:
            output.stdout.print(found)
        output.stdout.print(_summary(report))
    if root is not None and report.file is None and (report.problems or report.warnings):  # else no remedy
        from rmqtool.engine.reader import open_reader
        from rmqtool.ops.doctor import remedy_line

        line = remedy_line(report, open_reader(root, config), "verify found")
        if line is not None:
            output.note(line)
    if report.problems:
        raise typer.Exit(EXIT_PROBLEM)


def _summary(report) -> str:
    """The last line: what was checked, and the problems and warnings found."""
    found = f"{report.problems} problems, {report.warnings} warnings"
    if report.file is None:
        return (f"{report.messages} messages, {report.queue_entries} consume-queue entries, "
                f"{report.index_entries} index entries: {found}")
    counted = {"commitlog segment": f"{report.messages} messages: ",
               "consume-queue file": f"{report.queue_entries} entries: ",
               "index file": f"{report.index_entries} entries: "}.get(report.file_kind, "")
    return f"{screen.terminal_text(report.file)} ({report.file_kind}): {counted}{found}"


def salvage(
    store: Path = typer.Argument(..., help="Store root.", show_default=False),
    out: Path | None = typer.Option(None, "--out", help="File for every intact message: Parquet when "
                               "named .parquet or .pq, else JSONL (as export).", show_default=False),
    into: Path | None = typer.Option(None, "--into", help="A new store for every intact message, written as the "
                                     "broker would have appended them there (new offsets).", show_default=False),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing output file (--out)."),
    as_json: bool = typer.Option(False, "--json", help="A JSON summary (with every finding) on stdout."),
    show_all: bool = ALL,
    config: Path | None = CONFIG,
) -> None:
    """Export every intact message of a damaged store, reading past corrupt regions.

    Each record names its own offset, so the scan resynchronizes on the next one. With --out the
    messages go to a file, JSONL or Parquet by its suffix as with export (`import` puts them back at
    their offsets, `import --repack` one after another); with --into they go into a new store, one
    after another from offset 0, with the damaged store's geometry: queue offsets are counted again
    per queue, consume queues, index and checkpoint are written, and offset msgIds change (client
    msgIds do not). The corrupt regions skipped are listed on stderr; exit 1 when there were any, 0
    when the store was clean.

    Example: [bold]rmqtool salvage fixtures/store --out /tmp/salvaged.jsonl --force[/]
    Example: [bold]rmqtool salvage fixtures/store --into /tmp/salvaged-store --config fixtures/broker.conf[/]
    """
    from rmqtool.engine.reader import open_reader
    from rmqtool.errors import RmqError
    from rmqtool.report import group_findings

    if (out is None) == (into is None):
        raise RmqError("salvage writes to one place: give --out FILE or --into NEW_STORE")
    reader = open_reader(store, config)
    if into is not None:
        from rmqtool.ops.salvage import salvage_into

        with output.progress("salvage", None) as advance:
            done = salvage_into(reader, into, progress=advance)
        findings, messages, corrupt = done.findings, done.written.messages, done.corrupt_regions
        doc, where = done.to_json(), f"the new store {screen.terminal_text(str(into))}"
    else:
        from rmqtool.ops.export import export_store

        summary = export_store(reader, out, None, overwrite=force, what="salvage")
        findings, messages, corrupt = summary.findings, summary.messages, summary.corrupt_regions
        doc, where = {**summary.to_json(), "out": str(out)}, screen.terminal_text(str(out))
    if as_json:
        output.emit_json({**doc, "groups": [g.to_json() for g in group_findings(findings)]})
    else:
        found = output.findings_table(findings, show_all)
        if found is not None:
            output.stderr.print(found)
        output.stderr.print(f"{output.count(messages, 'intact message')} written to {where}; "
                            f"{output.count(corrupt, 'corrupt region')} skipped")
        if into is not None:
            output.note("salvage: the messages have new offsets in the new store: their offset msgIds changed (their "
                        "UNIQ_KEY client msgIds did not)")
    if corrupt:
        raise typer.Exit(EXIT_PROBLEM)
