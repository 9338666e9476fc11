"""`rmqtool recover STORE [--dry-run]` and `rmqtool clean STORE [--dry-run]`: a summary first (what
is lost, dropped, removed or freed), then the details grouped by kind, every item with `--all`.

The numbers come from the plans (`ops.recovery`, `ops.clean`); this module only renders them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from rmqtool.cli import output, screen

if TYPE_CHECKING:
    from rmqtool.structures.recoveryplan import RecoveryPlan

ALL = typer.Option(False, "--all", help="List every item (cut, file, message, queue) instead of one line per kind.")
LISTED_QUEUES = 5  # queues named on their details line without --all
LISTED_MESSAGES = 5  # msgIds named on the dropped messages' details line without --all
LISTED_FILES = 20  # clean lists its files one per line up to this many without --all


def recover(
    store: Path = typer.Argument(..., help="Store root.", show_default=False),
    dry_run: bool = typer.Option(False, "--dry-run", help="Report what recovery would do; change nothing."),
    thorough: bool = typer.Option(False, "--thorough", help="Beyond the broker: CRC-check every segment, rebuild "
                                  "queues missing entries and an index missing keys."),
    truncate_to: int | None = typer.Option(None, "--truncate-to", min=0, metavar="OFFSET",
                                           help="End the log at this record boundary (a slave ahead of its master: "
                                           "the master's max offset); refused off a boundary.", show_default=False),
    as_json: bool = typer.Option(False, "--json", help="One JSON document (the summary fields and every item)."),
    show_all: bool = ALL,
    config: Path | None = typer.Option(None, "--config", help="broker.conf of the store (sizes, CRC check, index).",
                                       show_default=False),
) -> None:
    """Recover a store as the broker does at start-up, and report what was cut and dropped.

    Clean shutdown: from the third-last segment; after a crash (abort present): from the
    checkpoint. CRC-checked; cut what follows the last good record, drop consume-queue entries
    past it, drop index files newer than the checkpoint, and re-dispatch. The output leads with a
    summary (the recovery point; messages and bytes lost; queue and index entries dropped and
    re-added; files removed), then one line per kind of change; --all lists every cut byte range,
    removed file, dropped message and queue. Every cut byte range and removed file is kept first
    under STORE/lost/<UTC time>/ with the plan (plan.json), so the recovery can be undone; --dry-run
    names that folder and creates nothing.

    --truncate-to OFFSET ends the log at that record boundary instead (refused, naming the nearest
    boundaries, when it is not one): later records, the queue entries pointing at them and the
    index files holding their keys go to lost/, and the index keys of the records kept are put
    back. A slave ahead of its master is mended with the master's max offset (`rmqtool diff`
    shows it).

    Example: [bold]rmqtool recover fixtures/store --config fixtures/broker.conf --dry-run[/]
    """
    from rmqtool.engine.opening import open_existing
    from rmqtool.ops.recovery import lost_dir_of, plan_recovery, recover_store

    opened = open_existing(store, config, "recover")
    if dry_run:
        from rmqtool.engine import journal

        interrupted = journal.pending(opened.paths)
        if interrupted is not None:
            output.note(f"first, {journal.describe(interrupted)} (the plan below is of the store as it is now)")
        plan = plan_recovery(opened, count_dispatch=True, thorough=thorough, truncate_to=truncate_to)
        lost = lost_dir_of(opened.paths, plan)
    else:  # one hold of the store lock from the plan to the end of the re-dispatch
        plan, lost = recover_store(opened, thorough=thorough, truncate_to=truncate_to)
    doc = {"dryRun": dry_run, "lostDir": None if lost is None or plan.refused else str(lost), **plan.to_json()}
    if as_json:
        output.emit_json(doc)
    else:
        _show_recovery(doc, store, show_all)
    if plan.salvageable:
        output.note(_salvage_hint(plan, store, None if dry_run else doc["lostDir"]))
    if plan.refused:
        raise typer.Exit(2)
    _left_behind(store, config, dry_run, quiet=bool(plan.salvageable))


def _salvage_hint(plan: RecoveryPlan, store: Path, lost: str | None) -> str:
    """The intact records a cut at a damaged record takes with it, and that `salvage` run first keeps them
    (`lost`: the folder a recovery done kept the cut bytes in; None: a dry run)."""
    cut = (f"{output.count(plan.salvageable, 'intact record')} ({output.size(plan.salvageable_bytes)}) after the "
           f"damaged record at commitlog offset {plan.end} ({plan.stop_reason})")
    salvage = f"`rmqtool salvage {store} --out FILE`"
    if lost is None:
        return (f"recover: would cut {cut}; `rmqtool doctor {store} --apply` cuts there and appends them again "
                f"(or run {salvage} first to keep them)")
    kept = Path(lost).relative_to(store) if Path(lost).is_relative_to(store) else lost  # made printable by note
    return f"recover: cut {cut}; their bytes are in {kept}/, and {salvage} run before recover keeps them as messages"


def _left_behind(store: Path, config: Path | None, dry_run: bool, quiet: bool) -> None:
    """The doctor's one line when the store (after a dry run: as it is; after recovery: as recovery left it)
    has problems a check finds (warnings alone, such as the stale index entries the broker's recovery leaves,
    are not named); exit 1 when a recovery done left problems."""
    from rmqtool.engine.reader import open_reader
    from rmqtool.errors import EXIT_PROBLEM
    from rmqtool.ops.doctor import remedy_line
    from rmqtool.ops.verify import verify_store

    reader = open_reader(store, config)
    report = verify_store(reader)
    line = None if quiet or not report.problems else remedy_line(report, reader,
                                                                 "the store has" if dry_run else "recover left")
    if line is not None:
        output.note(line)
    if report.problems and not dry_run:
        raise typer.Exit(EXIT_PROBLEM)


def _say(lines: list[str]) -> None:
    for line in lines:
        output.stdout.print(line, markup=False, soft_wrap=True)


def _name(store: Path, file: str) -> str:
    """A store file as a person reads it: relative to the store root when inside it, made printable."""
    try:
        return output.printable(Path(file).relative_to(store))
    except ValueError:
        return output.printable(file)


def _span(store: Path, group: dict) -> str:
    """The files of a group: the one file, or the first .. last."""
    if group["count"] == 1:
        return _name(store, group["first"])
    return f"{_name(store, group['first'])} .. {_name(store, group['last'])}"


def _show_recovery(doc: dict, store: Path, show_all: bool) -> None:
    if doc["refused"]:
        output.stdout.print(f"[red]refused, nothing changed:[/] {screen.terminal_text(doc['refused'])}")
        return
    _say(_recovery_summary(doc, store))
    details = _recovery_items(doc, store) if show_all else _recovery_groups(doc, store)
    if details:
        _say(["details:" if show_all else "details (--all lists every item):", *details])


_FILE_NOUNS = {"commitlog": "segment", "consumequeue": "consume-queue file", "index": "index file"}


def _files(count: int, structure: str) -> str:
    return output.count(count, _FILE_NOUNS.get(structure, "file"))


def _recovery_summary(doc: dict, store: Path) -> list[str]:
    """The answers at a glance: a headline, then one aligned line per answer."""
    dry = doc["dryRun"]

    def did(verb: str, past: str) -> str:
        return f"would {verb}" if dry else past

    c, point = doc["commitlog"], doc["recoveryPoint"]
    answers = [
        ("recovery point", _point(point, c["stop"])),
        ("last record", _stored(point["lastStoreTimestamp"] if point else None)),
        (did("lose", "lost"), _lost(doc)),
        ("consume queues", f"{did('drop', 'dropped')} {output.count(doc['queueEntriesDropped'], 'entry', 'entries')}, "
                           f"re-dispatch {did('add', 'added')} {doc['queueEntriesAdded']} "
                           f"({output.count(doc['queuesChanged'], 'queue')} changed)"),
        ("index", f"{did('drop', 'dropped')} {output.count(doc['indexEntriesDropped'], 'entry', 'entries')} in "
                  f"{output.count(doc['indexFilesDropped'], 'file')}, re-dispatch {did('add', 'added')} "
                  f"{output.count(doc['indexKeysAdded'], 'key')}{_fewer_keys(doc)}"),
        ("files", _removed(doc, did)),
        ("lost/ folder", _kept(doc, store, did)),
    ]
    width = max(len(label) for label, _ in answers) + 2
    return [_headline(doc), *(f"  {label + ':':{width}}{value}" for label, value in answers)]


def _fewer_keys(doc: dict) -> str:
    """Keys an index file took with it that the re-dispatch does not put back: the broker's rule after a
    crash, which leaves older messages unreachable by key until the whole log is indexed again."""
    fewer = doc["indexKeysFewer"]
    if not fewer or doc["thorough"]:
        return ""
    return (f" ({fewer} fewer: keys of lost messages and of messages before the recovery start; "
            "`recover --thorough` indexes the whole log)")


def _headline(doc: dict) -> str:
    head = "recover --dry-run (nothing changed)" if doc["dryRun"] else "recovered"
    how = "after a crash (abort present)" if doc["mode"] == "crash" else "after a clean shutdown"
    thorough = ", thorough" if doc["thorough"] else ""
    start = doc["commitlog"]["startSegment"]
    return f"{head}: {how}{thorough}" + (f", records checked from segment {output.printable(start)}" if start else "")


def _lost(doc: dict) -> str:
    if not (doc["bytesLost"] or doc["messagesLost"]):
        return "nothing (0 messages, 0 bytes)"
    torn = f" ({doc['tornMessages']} torn, known by their queue entries)" if doc["tornMessages"] else ""
    records, torn_bytes = output.size(doc["messageBytesLost"]), output.size(doc["tornBytes"])
    return (f"{output.count(doc['messagesLost'], 'message')}{torn}; {output.size(doc['bytesLost'])} past the recovery "
            f"point: {records} of records, {torn_bytes} torn or garbage")


def _kept(doc: dict, store: Path, did) -> str:
    """The lost/ folder that keeps every cut range and removed file, so the recovery can be undone."""
    if doc["lostDir"] is None:
        return "none (nothing is cut or removed)"
    what = f"{output.count(len(doc['truncated']), 'cut range')} and {output.count(doc['filesRemoved'], 'removed file')}"
    return f"{did('keep', 'kept')} {what} in {_name(store, doc['lostDir'])}/ with plan.json, as they were"


def _removed(doc: dict, did) -> str:
    by = ", ".join(_files(n, s) for s, n in doc["filesRemovedByStructure"].items())
    text = f"{did('remove', 'removed')} {doc['filesRemoved']}" + (f" ({by})" if by else "")
    if doc["segmentsFilled"]:
        text += (f"; {did('fill', 'filled')} {doc['segmentsFilled']} missing segments with a blank marker "
                 "(their messages were gone before recovery)")
    return text


def _point(point: dict | None, stop: str) -> str:
    if point is None:
        return "none: the commitlog holds no segment"
    return (f"commitlog offset {point['offset']} = segment {output.printable(point['segment'])} + "
            f"{point['position']} ({output.printable(stop)} there)")


def _stored(ms: int | None) -> str:
    return f"stored at {output.iso_time(ms)}" if ms is not None else "none intact from the start segment on"


def _recovery_groups(doc: dict, store: Path) -> list[str]:
    """One line per kind of change (bounded: the kinds are few)."""
    lines = []
    for g in doc["cutGroups"]:
        if g["structure"] == "commitlog" and g["count"] == 1:
            r = next(t for t in doc["truncated"] if t["file"] == g["first"])
            lines.append(f"  cut {_name(store, g['first'])} at {r['from']}..{r['to']} ({output.size(g['bytes'])}): "
                         f"{output.printable(g['reason'])}")
        else:
            lines.append(f"  cut {_files(g['count'], g['structure'])} ({_span(store, g)}), "
                         f"{output.size(g['bytes'])}: {output.printable(g['reason'])}")
    for f in doc["filledSegments"]:
        lines.append(f"  fill {_name(store, f)}: a missing segment, written back as one blank marker")
    for g in doc["deletedGroups"]:
        lines.append(f"  delete {_files(g['count'], g['structure'])} ({_span(store, g)}): "
                     f"{output.printable(g['reason'])}")
    if doc["droppedMessages"]:
        first = ", ".join(output.printable(m["msgId"]) for m in doc["droppedMessages"][:LISTED_MESSAGES])
        lines.append(f"  drop {doc['droppedMessageCount']} messages past the recovery point, first: {first}")
    if doc["tornMessages"]:
        lines.append(_torn(doc))
    changed = doc["consumeQueues"]
    if changed:
        shown = ", ".join(_queue_change(q) for q in changed[:LISTED_QUEUES])
        more = f" and {len(changed) - LISTED_QUEUES} more" if len(changed) > LISTED_QUEUES else ""
        lines.append(f"  queues: {shown}{more}")
    return lines


def _torn(doc: dict) -> str:
    return (f"  lose {output.count(doc['tornMessages'], 'torn message')}: consume-queue entries past the recovery "
            "point whose records no longer parse")


def _queue_change(q: dict) -> str:
    return f"{output.printable(q['topic'])}/{q['queueId']} -{q['entriesDropped']} +{q['entriesAdded']}"


def _recovery_items(doc: dict, store: Path) -> list[str]:
    """Every item, one line each."""
    lines = [f"  cut {_name(store, t['file'])} at {t['from']}..{t['to']} ({output.size(t['bytes'])}): "
             f"{output.printable(t['reason'])}" for t in doc["truncated"]]
    lines += [f"  fill {_name(store, f)}: a missing segment, written back as one blank marker"
              for f in doc["filledSegments"]]
    lines += [f"  delete {_name(store, d['file'])}: {output.printable(d['reason'])}" for d in doc["deletedFiles"]]
    lines += [f"  drop message {m['msgId']} at {m['commitLogOffset']} ({output.printable(m['topic'])}/{m['queueId']})"
              for m in doc["droppedMessages"]]
    unlisted = doc["droppedMessageCount"] - len(doc["droppedMessages"])
    if unlisted > 0:
        lines.append(f"  ... and {unlisted} more messages past the recovery point (not listed)")
    if doc["tornMessages"]:
        lines.append(_torn(doc))
    lines += [f"  queue {output.printable(q['topic'])}/{q['queueId']}: "
              f"{output.count(q['entriesDropped'], 'entry', 'entries')} dropped, {q['entriesAdded']} added"
              for q in doc["consumeQueues"]]
    return lines


def clean(
    store: Path = typer.Argument(..., help="Store root.", show_default=False),
    reserved_hours: float | None = typer.Option(None, "--reserved-hours", min=0, help="Keep segments modified within "
                                                "this many hours (default: fileReservedTime of the config, 72).",
                                                show_default=False),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be deleted; delete nothing."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document."),
    show_all: bool = typer.Option(False, "--all", help="List every file, however many."),
    config: Path | None = typer.Option(None, "--config", help="broker.conf of the store.", show_default=False),
) -> None:
    """Delete expired commitlog segments (never the newest) and the consume-queue and index
    files they orphan, as the broker's cleanup does.

    A segment's age is its file's modification time, as the broker's cleanup reads it, not the
    times of the messages in it: a store copied today expires 72 h from now. The output leads with
    the files and bytes freed per structure and where the commitlog starts after; the files
    follow (a line per kind when there are many; --all lists each).

    Example: [bold]rmqtool clean fixtures/store --reserved-hours 48 --dry-run[/]
    """
    from rmqtool.engine.opening import open_existing
    from rmqtool.ops.clean import apply_clean, plan_clean

    opened = open_existing(store, config, "clean")
    plan = plan_clean(opened, reserved_hours=reserved_hours)
    if not dry_run:
        apply_clean(opened, plan)
    doc = {"dryRun": dry_run, **plan.to_json()}
    if as_json:
        output.emit_json(doc)
        return
    _say(_clean_summary(doc))
    _say(_clean_details(doc, store, show_all))


_STRUCTURE_NAMES = {"commitlog": "commitlog", "consumequeue": "consume queues", "index": "index"}


def _clean_summary(doc: dict) -> list[str]:
    n, dry = doc["filesDeleted"], doc["dryRun"]
    if not n:
        return [f"nothing to delete: no segment but the newest was modified more than {doc['reservedHours']} h "
                f"ago (a file's age is its mtime, as the broker's: a store copied today is not expired); the "
                f"commitlog starts at {doc['minOffset']}"]
    freed = output.size(doc["bytesFreed"])
    head = (f"would delete {n} files, {freed}; the commitlog would then start at {doc['minOffset']} "
            f"(now at {doc['minOffsetBefore']}); nothing changed (dry run)" if dry else
            f"deleted {n} files, freed {freed}; the commitlog now starts at {doc['minOffset']} "
            f"(was at {doc['minOffsetBefore']})")
    lines = [head]
    for structure, f in doc["freed"].items():
        name = _STRUCTURE_NAMES.get(structure, structure)
        lines.append(f"  {name + ':':16} {output.count(f['files'], 'file')}, {output.size(f['bytes'])}" + _on_disk(f))
    return lines


def _on_disk(f: dict) -> str:
    """The bytes on disk, when they differ from the files' sizes (sparse files)."""
    return f"; {output.size(f['diskBytes'])} on disk" if f["diskBytes"] != f["bytes"] else ""


def _clean_details(doc: dict, store: Path, show_all: bool) -> list[str]:
    """Every file when asked or when few; else one line per structure and reason."""
    verb = "would delete" if doc["dryRun"] else "deleted"
    if not doc["deletedFiles"]:
        return []
    if show_all or len(doc["deletedFiles"]) <= LISTED_FILES:
        return ["details:", *(f"  {verb} {_name(store, d['file'])}, {output.size(d['bytes'])}: "
                              f"{output.printable(d['reason'])}" for d in doc["deletedFiles"])]
    return ["details (--all lists every file):",
            *(f"  {verb} {_files(g['count'], g['structure'])} ({_span(store, g)}), {output.size(g['bytes'])}: "
              f"{output.printable(g['reason'])}" for g in doc["groups"])]
