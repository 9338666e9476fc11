"""`rmqtool doctor STORE [--apply]`: every structure's check, one plan that mends what they found, and the
plan carried out."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output, screen
from rmqtool.errors import EXIT_BAD_INPUT, EXIT_PROBLEM

POSITIONS_LISTED = 20  # consumer positions a plan lists for a person; --json lists every one
CONFIG = typer.Option(None, "--config", help="broker.conf of the store.", show_default=False)


def doctor(
    store: Path = typer.Argument(..., help="Store root.", show_default=False),
    apply: bool = typer.Option(False, "--apply", help="Carry out the plan as one transaction under the store lock: "
                               "every new file staged and checked first, then swapped in with one journaled step "
                               "(an interrupted repair is finished by the next writer); what it replaces and the "
                               "ledger of what it loses kept under STORE/lost/."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document: findings per kind, the plan's steps, its "
                                 "loss and the consumer positions it moves, and with --apply the lost/ folder and "
                                 "the check afterwards."),
    config: Path | None = CONFIG,
) -> None:
    """Check every structure of the store, and show one plan that mends what was found.

    Each finding comes with the fix that mends it, in the order the fixes run: a cut of the log at
    a damaged record with the intact records after it appended again, the broker's recovery, a
    consume-queue or index rebuild, a checkpoint reset; each says what it loses (records, bytes),
    and the plan lists the committed consumer positions that move with renumbered queues.
    Read-only unless --apply. Exit 0 healthy (or mended by --apply), 1 a plan to carry out (or
    a repair that would not leave a healthy store: nothing changed), 2 damage no repair in place
    undoes (a missing segment between two others): named, and the store left as it is.

    Example: [bold]rmqtool doctor fixtures/store --config fixtures/broker.conf[/]
    """
    from rmqtool.engine.recognition import require_store_root
    from rmqtool.files.paths import StorePaths
    from rmqtool.ops import doctor as ops

    require_store_root(store, "doctor")
    if not apply:
        output.warn_if_locked(StorePaths(store))
        diagnosis = ops.diagnose(store, config)
        if as_json:
            output.emit_json({**diagnosis.to_json(), "applied": False})
        else:
            _show(diagnosis, apply)
        if diagnosis.status != ops.HEALTHY:
            raise typer.Exit(EXIT_BAD_INPUT if diagnosis.status == ops.UNMENDABLE else EXIT_PROBLEM)
        return
    from rmqtool.ops import repair

    outcome = repair.apply(store, config, on_plan=None if as_json else lambda d: _show(d, apply))
    if as_json:
        output.emit_json(outcome.to_json())
    else:
        _show_outcome(outcome)
    if outcome.status == repair.UNMENDABLE:
        raise typer.Exit(EXIT_BAD_INPUT)
    if outcome.status == repair.NOT_MENDED:
        raise typer.Exit(EXIT_PROBLEM)


def _show_outcome(outcome) -> None:
    from rmqtool.ops.repair import HEALTHY, MENDED, UNMENDABLE

    after = outcome.after
    if outcome.finished_swap:
        output.stdout.print("finished first: a repair that was stopped after it committed (its files are all in "
                            "place now)")
    if outcome.status in (HEALTHY, UNMENDABLE):
        return
    if outcome.status == MENDED:
        moved = f"; {output.count(len(outcome.moved), 'consumer position')} moved" if outcome.moved else ""
        output.stdout.print(f"applied: verify now finds {after.problems} problems, {after.warnings} warnings{moved}; "
                            f"kept in lost/: {screen.terminal_text(outcome.lost)}")
        return
    kinds = ", ".join(f"{n} {k}" for k, n in after.by_kind().items())
    output.stdout.print(f"not applied: the repaired store would still have {after.problems} problems ({kinds}): "
                        "nothing changed")


def _show(diagnosis, apply: bool) -> None:
    from rmqtool.ops.doctor import HEALTHY, UNMENDABLE

    root = screen.terminal_text(str(diagnosis.root))
    report = diagnosis.report
    checked = (f"{report.messages} messages, {report.queue_entries} consume-queue entries, "
               f"{report.index_entries} index entries")
    if diagnosis.status == HEALTHY:
        output.stdout.print(f"doctor {root}: healthy ({checked} checked)")
        return
    if diagnosis.interrupted:
        output.stdout.print(f"doctor {root}: a repair was stopped half-way through its swap (not checked further)")
    else:
        output.stdout.print(f"doctor {root}: {report.problems} problems, {report.warnings} warnings ({checked} "
                            "checked)")
    for kind, n in report.by_kind().items():
        output.stdout.print(f"  {n:>7}  {kind}")
    if diagnosis.refused:
        output.stdout.print(f"  the broker's recovery refuses this store: {screen.terminal_text(diagnosis.refused)}")
    if diagnosis.status == UNMENDABLE:
        output.stdout.print("cannot be mended in place (nothing changed):")
    else:
        how = "carried out now" if apply else "`rmqtool doctor STORE --apply` carries it out"
        output.stdout.print(f"plan, in this order ({how}; what it cuts or replaces is kept in {root}/lost/):")
    for n, step in enumerate(diagnosis.steps, 1):
        output.stdout.print(f"  {n}. {_step_line(step, diagnosis.root)}")
    moved = diagnosis.repair.positions
    if moved:
        output.stdout.print(f"consumer positions that move with the renumbered queues ({len(moved)}; offset msgIds "
                            "of moved records change, UNIQ_KEY does not):")
        for m in moved[:POSITIONS_LISTED]:
            output.stdout.print(f"  {screen.terminal_text(m.group)} {screen.terminal_text(m.topic)}/{m.queue_id}: "
                                f"{m.before} -> {m.after}")
        if len(moved) > POSITIONS_LISTED:
            output.stdout.print(f"  ... {len(moved) - POSITIONS_LISTED} more (--json lists them all)")
    if diagnosis.salvage is not None:
        output.stdout.print(f"instead: `{screen.terminal_text(diagnosis.salvage['command'])}` writes the "
                            f"{output.count(diagnosis.salvage['records'], 'intact record')} into a new store "
                            "(offset msgIds change, UNIQ_KEY does not; this store stays as it is)")


def _step_line(step, root: Path) -> str:
    r = step.repair
    target = Path(r.target)
    where = target.relative_to(root) if target.is_relative_to(root) else target
    text = f"{r.action}  {screen.terminal_text(str(where))}: {screen.terminal_text(r.reason)}"
    costs = []
    if step.mends:
        costs.append(f"mends {output.count(step.mends, 'finding')}")
    if step.bytes_lost:
        costs.append(f"loses {output.count(step.records_lost, 'record')} ({output.size(step.bytes_lost)}, kept in "
                     "lost/)")
    elif step.records_lost:
        costs.append(f"{output.count(step.records_lost, 'record')} already lost: their queue entries go")
    if step.records_kept:
        costs.append(f"appends {output.count(step.records_kept, 'intact record')} ({output.size(step.bytes_kept)}) "
                     "again at new offsets: their offset msgIds change")
    return text + ("; " + "; ".join(costs) if costs else "")
