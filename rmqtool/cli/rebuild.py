"""`rmqtool rebuild STORE [--queues] [--index] [--apply]`: queues and index built again from the log."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output
from rmqtool.errors import EXIT_PROBLEM


def rebuild(
    store: Path = typer.Argument(..., help="Store root.", show_default=False),
    queues: bool = typer.Option(False, "--queues", help="Rebuild the consume queues (with neither flag: both)."),
    index: bool = typer.Option(False, "--index", help="Rebuild the index (with neither flag: both)."),
    apply: bool = typer.Option(False, "--apply", help="Swap the rebuilt folders in when they differ (the old ones "
                               "go to STORE/lost/)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document."),
    config: Path | None = typer.Option(None, "--config", help="broker.conf of the store.", show_default=False),
) -> None:
    """Rebuild consume queues and/or the index from the commitlog, compare them with the store's, and swap them in.

    The log is dispatched as the broker's reput does it into a staging folder inside the store
    (STORE/.rebuild/), then compared: per queue the entries equal, missing from the store, extra
    in it, and different at the same queue offset (filler entries and entries into the deleted
    head of the log do not count); for the index, its keys. Without --apply nothing in the store
    changes and the exit code is 1 when they differ. --apply swaps the rebuilt folders in under
    a journal: a process killed during the swap leaves it to the next writer (any rmqtool write,
    recover, rebuild) to finish, so the store never keeps a mix of old and new. The old folders
    are kept under STORE/lost/. Needs the store's lock (stop the broker first).

    Example: [bold]rmqtool rebuild ~/store --queues --apply[/]
    """
    from rmqtool.engine.opening import open_existing
    from rmqtool.ops.rebuild import rebuild as rebuild_store

    opened = open_existing(store, config, "rebuild")
    both = not queues and not index
    report = rebuild_store(opened, queues=queues or both, index=index or both, apply=apply)
    doc = report.to_json()
    if as_json:
        output.emit_json(doc)
    else:
        _show(doc)
    if report.changes and not report.applied:
        raise typer.Exit(EXIT_PROBLEM)


def _show(doc: dict) -> None:
    summary = {"rebuilt": " and ".join(doc["parts"]),
               "consume queues": f"{doc['queuesCompared']} compared, {doc['queuesChanged']} differ: "
                                 f"{doc['entriesMissing']} entries missing from the store, {doc['entriesExtra']} extra "
                                 f"in it, {doc['entriesDifferent']} different" if "consumequeue" in doc["parts"]
               else "not rebuilt"}
    if doc["index"] is not None:
        i = doc["index"]
        summary["index"] = (f"{i['keysEqual']} keys equal, {i['keysMissing']} missing from the store, {i['keysExtra']} "
                            f"extra in it ({i['filesBefore']} files now, {i['filesAfter']} rebuilt)")
    summary["result"] = (f"swapped in; the old folders are in {doc['lost']}" if doc["applied"] else
                         "the store already matches its log: nothing to do" if not doc["changes"] else
                         "differences found; nothing changed (--apply swaps the rebuilt folders in)")
    output.stdout.print(output.key_values("rebuild", summary))
    if doc["queues"]:
        t = output.table("queues that differ", ["topic", "queue", "equal", "missing", "extra", "different"])
        for q in doc["queues"]:
            t.add_row(q["topic"], str(q["queueId"]), str(q["equal"]), str(q["missing"]), str(q["extra"]),
                      str(q["different"]))
        output.stdout.print(t)
