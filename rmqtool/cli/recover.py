"""`rmqtool recover STORE [--dry-run]`: the broker's start-up recovery, shown before it is done."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output


def recover(
    store: Path = typer.Argument(..., help="Store root."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Report what recovery would do; change nothing."),
    thorough: bool = typer.Option(False, "--thorough", help="Beyond the broker: CRC-check every segment, rebuild "
                                  "queues missing entries and an index missing keys."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document."),
    config: Path | None = typer.Option(None, "--config", help="broker.conf of the store (sizes, CRC check, index)."),
) -> None:
    """Recover a store as the broker does at start-up: clean (from the third-last segment) or after
    a crash (abort present: from the checkpoint), CRC-checked; cut what follows the last good
    record, drop consume-queue entries past it, drop index files newer than the checkpoint,
    and re-dispatch. The report lists every cut byte range, dropped message and queue entry.

    Example: [bold]rmqtool recover /data/store --config broker.conf --dry-run[/]
    """
    from rmqtool.errors import RmqError
    from rmqtool.ops.recovery import apply_recovery, plan_recovery
    from rmqtool.store.config import StoreConfig
    from rmqtool.store.kind import require_store
    from rmqtool.store.lock import lock_holder
    from rmqtool.store.paths import StorePaths

    cfg = StoreConfig.from_file(config)[0] if config else StoreConfig()
    require_store(StorePaths(store), "recover")
    holder = lock_holder(StorePaths(store))
    if holder is not None and not dry_run:
        raise RmqError(f"store {store} is locked by process {holder} (a running broker?): nothing changed")
    plan = plan_recovery(store, cfg, count_dispatch=dry_run, thorough=thorough)
    if not dry_run and not plan.refused:
        apply_recovery(store, cfg, plan)
    doc = {"dryRun": dry_run, **plan.to_json()}
    if as_json:
        output.emit_json(doc)
    else:
        _show(doc)
    if plan.refused:
        raise typer.Exit(2)


def _show(doc: dict) -> None:
    if doc["refused"]:
        output.stdout.print(f"[red]refused, nothing changed:[/] {output.terminal_text(doc['refused'])}")
        return
    verb = "would" if doc["dryRun"] else "did"
    c = doc["commitlog"]
    kind = f"{doc['mode']} shutdown" + (", thorough" if doc["thorough"] else "")
    output.stdout.print(f"recovery ({kind}), {verb}: commitlog from {c['startSegment']} "
                        f"ends at {c['end']} ({c['stop']}); data ended at {c['dataEnd']}")
    if doc["truncated"]:
        t = output.table("bytes cut", ["file", "from", "to", "bytes", "reason"])
        for r in doc["truncated"]:
            t.add_row(r["file"], str(r["from"]), str(r["to"]), str(r["bytes"]), r["reason"])
        output.stdout.print(t)
    for f in doc["filledSegments"]:
        output.stdout.print(f"fill {output.terminal_text(f)}: a missing segment, written back as one blank marker "
                            "(its messages are lost)")
    for d in doc["deletedFiles"]:
        output.stdout.print(f"delete {output.terminal_text(d['file'])}: {output.terminal_text(d['reason'])}")
    if doc["droppedMessageCount"]:
        output.stdout.print(f"{doc['droppedMessageCount']} messages past the end are dropped, first: "
                            + ", ".join(m["msgId"] for m in doc["droppedMessages"][:5]))
    for q in doc["consumeQueues"]:
        output.stdout.print(f"queue {output.terminal_text(q['topic'])}/{q['queueId']}: {q['entriesDropped']} "
                            f"entries dropped, "
                            f"{q['entriesAdded']} added")
    idx = doc["index"]
    if idx["filesDropped"] or idx["keysAdded"]:
        output.stdout.print(f"index: {len(idx['filesDropped'])} files dropped, {idx['keysAdded']} keys added")


def clean(
    store: Path = typer.Argument(..., help="Store root."),
    reserved_hours: float | None = typer.Option(None, "--reserved-hours", help="Keep segments modified within this "
                                                "many hours (default: fileReservedTime of the config, 72)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be deleted; delete nothing."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document."),
    config: Path | None = typer.Option(None, "--config", help="broker.conf of the store."),
) -> None:
    """Delete expired commitlog segments (never the newest) and the consume-queue and index
    files they orphan, as the broker's cleanup does.

    Example: [bold]rmqtool clean /data/store --reserved-hours 48 --dry-run[/]
    """
    from rmqtool.ops.clean import apply_clean, plan_clean
    from rmqtool.store.config import StoreConfig
    from rmqtool.store.kind import require_store
    from rmqtool.store.paths import StorePaths

    cfg = StoreConfig.from_file(config)[0] if config else StoreConfig()
    require_store(StorePaths(store), "clean")
    plan = plan_clean(store, cfg, reserved_hours)
    if not dry_run:
        apply_clean(store, cfg, plan)
    doc = {"dryRun": dry_run, **plan.to_json()}
    if as_json:
        output.emit_json(doc)
        return
    verb = "would delete" if dry_run else "deleted"
    for d in doc["deletedFiles"]:
        output.stdout.print(f"{verb} {d['file']}: {d['reason']}")
    output.stdout.print(f"{len(doc['deletedFiles'])} files; the commitlog now starts at {doc['minOffset']}")
