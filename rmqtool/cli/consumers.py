"""`rmqtool consumers STORE`: where each consumer group stands, and offsets reset while the broker is down."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output, screen
from rmqtool.cli.grid import Column
from rmqtool.cli.times import TIME_HELP, TIME_UNIT, epoch_ms, unit_needs_a_time
from rmqtool.errors import EXIT_PROBLEM, RmqError


def consumers(
    store: Path = typer.Argument(..., help="Store root.", show_default=False),
    group: str | None = typer.Option(None, "--group", help="Only this consumer group.", show_default=False),
    topic: str | None = typer.Option(None, "--topic", help="Only this topic (with --reset: the topic to reset; with "
                                     "--clone or --delete: only this topic's offsets).", show_default=False),
    reset: str | None = typer.Option(None, "--reset", metavar="GROUP", help="Reset this group's offsets on --topic "
                                     "(needs the store's lock: stop the broker first).", show_default=False),
    to_time: str | None = typer.Option(None, "--to-time", help="Reset: to the first message stored at or after this "
                                       f"time ({TIME_HELP}), per queue.", show_default=False),
    time_unit: str | None = TIME_UNIT,
    to_offset: int | None = typer.Option(None, "--to-offset", min=0, help="Reset: to this queue offset on every "
                                         "queue (or on --queue).", show_default=False),
    to_earliest: bool = typer.Option(False, "--to-earliest", help="Reset: to each queue's min offset."),
    to_latest: bool = typer.Option(False, "--to-latest", help="Reset: to each queue's max offset (skip the "
                                   "backlog)."),
    queue: int | None = typer.Option(None, "--queue", min=0, help="Reset: only this queue of --topic.",
                                     show_default=False),
    clone: str | None = typer.Option(None, "--clone", metavar="SRC", help="Copy this group's committed offsets "
                                     "to --to (every topic of it, or --topic).", show_default=False),
    clone_to: str | None = typer.Option(None, "--to", metavar="DST", help="Clone: the group that gets the offsets "
                                        "(its entries for those topics are replaced).", show_default=False),
    delete: str | None = typer.Option(None, "--delete", metavar="GROUP", help="Remove this group's committed "
                                      "offsets (on every topic, or --topic).", show_default=False),
    dry_run: bool = typer.Option(False, "--dry-run", help="Reset, clone, delete: print the old and new offsets, "
                                 "change nothing."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document."),
    config: Path | None = typer.Option(None, "--config", help="broker.conf of the store.", show_default=False),
) -> None:
    """Show each consumer group's progress: committed offset, lag in messages and in time, per queue.

    Read from config/consumerOffset.json (or its .bak, as the broker loads it) against each queue's
    min and max offset; groups and queues are sorted by lag, the most behind first. A group whose
    offset is below a queue's min (messages deleted before it consumed them) or above its max is
    flagged, and the exit code is 1. Each group's retry (%RETRY%) and dead-letter (%DLQ%) topic
    sizes are shown beside it.

    With the broker stopped, three actions change the offsets. --reset GROUP --topic T with one of
    --to-time, --to-offset, --to-earliest, --to-latest sets the group's offset on every queue of T
    (or on --queue Q alone). --clone SRC --to DST copies SRC's offsets to DST, as mqadmin
    cloneGroupOffset does (every topic of SRC, or --topic T). --delete GROUP removes the group's
    offsets (every topic, or --topic T). Each writes the file the way the broker does (.tmp, .bak,
    rename), needs the store's lock (refused while a broker runs) and prints each queue's old and
    new offset; --dry-run prints them and writes nothing.

    Example: [bold]rmqtool consumers ~/store --group orders-service[/]
    Example: [bold]rmqtool consumers ~/store --reset billing --topic OrderTopic --queue 2 --to-offset 40 --dry-run[/]
    Example: [bold]rmqtool consumers ~/store --clone billing --to billing-v2 --topic OrderTopic[/]
    Example: [bold]rmqtool consumers ~/store --delete retired-service[/]
    """
    from rmqtool.engine.reader import open_root_reader

    unit_needs_a_time(time_unit, to_time=to_time)
    when = epoch_ms(to_time, "--to-time", time_unit)
    actions = [name for name, value in (("--reset", reset), ("--clone", clone), ("--delete", delete))
               if value is not None]
    if len(actions) > 1:
        raise RmqError(f"{actions[0]} and {actions[1]} are different actions: give one")
    reset_only = [name for name, given in (("--to-time", to_time is not None), ("--to-offset", to_offset is not None),
                                           ("--to-earliest", to_earliest), ("--to-latest", to_latest),
                                           ("--queue", queue is not None)) if given]
    if reset_only and reset is None:
        raise RmqError(f"{', '.join(reset_only)} {'goes' if len(reset_only) == 1 else 'go'} with --reset GROUP")
    if (clone is None) != (clone_to is None):
        raise RmqError("--clone SRC needs --to DST (the group that gets the offsets)" if clone is not None else
                       "--to DST goes with --clone SRC")
    if not actions:
        if dry_run:
            raise RmqError("--dry-run goes with --reset, --clone or --delete")
        _progress(open_root_reader(store, config), group, topic, as_json)
        return
    acted_on = reset or delete
    if group is not None and group != acted_on:
        raise RmqError(f"--group {group} and {actions[0]} {clone if clone is not None else acted_on} name different "
                       "groups" if acted_on is not None else "--group does not go with --clone (name SRC and --to DST)")
    if clone is not None and clone == clone_to:
        raise RmqError(f"--clone {clone} --to {clone_to}: a group cannot be cloned onto itself")
    reader = open_root_reader(store, config)
    if reset is not None:
        if topic is None:
            raise RmqError("--reset needs --topic (the topic whose offsets to reset)")
        _reset(reader, reset, topic, dry_run, as_json, queue=queue, to_time=when, to_offset=to_offset,
               earliest=to_earliest, latest=to_latest)
    else:
        _entries(reader, clone, clone_to, delete, topic, dry_run, as_json)


def _progress(reader, group: str | None, topic: str | None, as_json: bool) -> None:
    from rmqtool.ops.consumers import STATE_TEXT, consumer_lag, progress_doc

    groups = consumer_lag(reader, group, topic)
    flagged = sum(len(g.flagged) for g in groups)
    if as_json:
        output.emit_json(progress_doc(reader, groups))
    elif not groups:
        output.note("0 groups: the store has no committed consumer offsets"
                    + (f" on topic {screen.terminal_text(topic)}" if topic else ""))
    else:
        _tables(groups)
        for g in groups:
            if g.no_offset:
                output.note(f"{g.group}: {output.count(g.no_offset_messages, 'message')} in "
                            f"{output.count(len(g.no_offset), 'queue')} without a committed offset (no-offset) "
                            "are not in its lag")
        for state in sorted({q.state for g in groups for q in g.flagged}):
            output.warn(f"{state}: {STATE_TEXT[state]}")
    if flagged:
        raise typer.Exit(EXIT_PROBLEM)


# `keep`: on a narrow terminal the lowest goes first. Long group and topic names shrink (`crowds`) for what an
# operator came for: the queue, its lag in messages and in time, its state, and its min and max when they fit
# (at 80 columns); number columns are as wide as their widest value.
_GROUP_COLUMNS = [Column("group", 24, least=10, keep=9), Column("topics", 30, least=10, keep=3),
                  Column("queues", 6, right=True, keep=4), Column("lag", 3, right=True, keep=8, crowds=True),
                  Column("lag time", 8, least=8, right=True, keep=7, crowds=True),
                  Column("retry", 5, right=True, keep=2), Column("DLQ", 3, right=True, keep=1),
                  Column("flagged", 7, right=True, keep=6, crowds=True)]
_QUEUE_COLUMNS = [Column("group", 20, least=12, keep=9), Column("topic", 20, least=12, keep=8),
                  Column("queue", 5, right=True, keep=7, crowds=True), Column("committed", 9, right=True, keep=3),
                  Column("min", 3, right=True, keep=1, crowds=True), Column("max", 3, right=True, keep=2, crowds=True),
                  Column("lag", 3, right=True, keep=6, crowds=True),
                  Column("lag time", 8, least=8, right=True, keep=5, crowds=True),
                  Column("state", 10, least=8, keep=4, crowds=True)]


def _tables(groups) -> None:
    """The groups, then their queues, most behind first: streamed line tables (a store may have tens of
    thousands of queue rows)."""
    from rmqtool.cli.grid import paged, write_table

    summary = [[g.group for g in groups], [", ".join(sorted({q.topic for q in g.queues})) for g in groups],
               [len(g.queues) for g in groups], [g.lag for g in groups], [output.duration(g.lag_ms) for g in groups],
               [g.retry_messages for g in groups], [g.dlq_messages for g in groups],
               [len(g.flagged) if g.flagged else "-" for g in groups]]
    rows = [q for g in groups for q in g.queues]
    queues = [[q.group for q in rows], [q.topic for q in rows], [q.queue_id for q in rows],
              [_n(q.committed) for q in rows], [_n(q.min_offset) for q in rows], [_n(q.max_offset) for q in rows],
              [_n(q.lag) for q in rows], [output.duration(q.lag_ms) for q in rows], [q.state for q in rows]]
    with paged() as out:
        out.write("consumer groups, most behind first\n")
        write_table(out, _GROUP_COLUMNS, [summary], every_field="--json")
        out.write("\nqueues, most behind first\n")
        write_table(out, _QUEUE_COLUMNS, [queues], every_field="--json")


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def _reset(reader, group: str, topic: str, dry_run: bool, as_json: bool, **target) -> None:
    from rmqtool.ops.offset_admin import reset_offsets

    plan = reset_offsets(reader, group, topic, dry_run=dry_run, **target)
    if as_json:
        output.emit_json({**plan.to_json(), "dryRun": dry_run, "changed": 0 if dry_run else plan.changes})
        return
    verb = "would set" if dry_run else "set"
    to = plan.target
    where = (f"the first message stored at or after {output.iso_time(to['time'])}" if "time" in to else
             f"offset {to['offset']}" if "offset" in to else "each queue's min offset" if "earliest" in to else
             "each queue's max offset")
    if plan.queue is not None:
        where = where.replace("each queue's", "the queue's") + f" on queue {plan.queue}"
    output.stdout.print(screen.terminal_text(f"{group} on {topic}: {verb} offsets to {where}"), soft_wrap=True)
    t = output.table(None, ["queue", "old offset", "new offset", "min", "max"])
    for r in plan.rows:
        t.add_row(str(r["queueId"]), _n(r["oldOffset"]), str(r["newOffset"]), str(r["minOffset"]), str(r["maxOffset"]))
    output.stdout.print(t)
    if plan.kept:
        kept = ", ".join(map(str, plan.kept))
        output.warn(f"queues {kept} of {screen.terminal_text(topic)} are in the offset table but not in the store: "
                    "left as they are")
    queues = output.count(plan.changes, "queue")
    output.note(f"dry run: {queues} would change; nothing was written" if dry_run else
                f"{queues} changed in {plan.file} (the old text is in its .bak)")


def _entries(reader, source: str | None, dest: str | None, delete: str | None, topic: str | None, dry_run: bool,
             as_json: bool) -> None:
    """--clone SRC --to DST or --delete GROUP: the entries replaced, a row per queue."""
    from rmqtool.ops.offset_admin import clone_offsets, delete_offsets

    if delete is not None:
        plan = delete_offsets(reader, delete, topic, dry_run=dry_run)
        what = f"{delete}: {'would remove' if dry_run else 'removed'} its offsets on "
    else:
        plan = clone_offsets(reader, source, dest, topic, dry_run=dry_run)
        what = f"{source} -> {dest}: {'would copy' if dry_run else 'copied'} the offsets on "
    topics = sorted({name for name, _ in plan.entries})
    what += f"topic {topics[0]}" if topic is not None else f"{output.count(len(topics), 'topic')} ({', '.join(topics)})"
    if as_json:
        output.emit_json({**plan.to_json(), "dryRun": dry_run, "changed": 0 if dry_run else plan.changes})
        return
    output.stdout.print(screen.terminal_text(what), soft_wrap=True)
    t = output.table(None, ["group", "topic", "queue", "old offset", "new offset"])
    for r in plan.rows:
        t.add_row(r["group"], r["topic"], str(r["queueId"]), _n(r["oldOffset"]),
                  "(removed)" if r["newOffset"] is None else str(r["newOffset"]))
    output.stdout.print(t)
    queues = output.count(plan.changes, "queue")
    output.note(f"dry run: {queues} would change; nothing was written" if dry_run else
                f"{queues} changed in {plan.file} (the old text is in its .bak)")
