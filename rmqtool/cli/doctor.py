"""`rmqtool doctor STORE [--apply]`: every structure's check, one plan that mends what they found, and the
plan carried out."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output, screen
from rmqtool.errors import EXIT_BAD_INPUT, EXIT_PROBLEM

CONFIG = typer.Option(None, "--config", help="broker.conf of the store.", show_default=False)


def doctor(
    store: Path = typer.Argument(..., help="Store root.", show_default=False),
    apply: bool = typer.Option(False, "--apply", help="Carry out the plan (each step under the store lock and the "
                               "write journal; everything cut or replaced kept under STORE/lost/), then check again."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document: findings per kind, the plan's steps, and "
                                 "with --apply the lost/ folders and the check afterwards."),
    config: Path | None = CONFIG,
) -> None:
    """Check every structure of the store, and show one plan that mends what was found.

    Each finding comes with the fix that mends it, in the order the fixes run: a cut of the log at
    a damaged record with the intact records after it appended again, the broker's recovery, a
    consume-queue or index rebuild, a checkpoint reset. Each step says what it loses (records,
    bytes) and where that is kept. Read-only unless --apply. Exit 0 healthy (or mended by
    --apply), 1 a plan to carry out (or problems left after --apply), 2 damage no repair in
    place undoes (a missing segment between two others): named, and the store left as it is.

    Example: [bold]rmqtool doctor fixtures/store --config fixtures/broker.conf[/]
    """
    from rmqtool.engine.recognition import require_store_root
    from rmqtool.files.paths import StorePaths
    from rmqtool.ops import doctor as ops

    require_store_root(store, "doctor")
    if not apply:
        output.warn_if_locked(StorePaths(store))
    diagnosis = ops.diagnose(store, config)
    if diagnosis.status == ops.UNMENDABLE or not apply or diagnosis.status == ops.HEALTHY:
        if as_json:
            output.emit_json({**diagnosis.to_json(), "applied": False})
        else:
            _show(diagnosis, apply)
        if diagnosis.status != ops.HEALTHY:
            raise typer.Exit(EXIT_BAD_INPUT if diagnosis.status == ops.UNMENDABLE else EXIT_PROBLEM)
        return
    if not as_json:
        _show(diagnosis, apply)
    outcome = ops.apply(diagnosis, config)
    if as_json:
        output.emit_json(outcome.to_json())
    else:
        after = outcome.after
        kept = ", ".join(screen.terminal_text(p) for p in outcome.lost) or "nothing was cut"
        output.stdout.print(f"applied: verify now finds {after.problems} problems, {after.warnings} warnings; "
                            f"kept in lost/: {kept}")
    if not outcome.mended:
        raise typer.Exit(EXIT_PROBLEM)


def _show(diagnosis, apply: bool) -> None:
    from rmqtool.ops.doctor import HEALTHY, UNMENDABLE

    root = screen.terminal_text(str(diagnosis.root))
    report = diagnosis.report
    checked = (f"{report.messages} messages, {report.queue_entries} consume-queue entries, "
               f"{report.index_entries} index entries")
    if diagnosis.status == HEALTHY:
        output.stdout.print(f"doctor {root}: healthy ({checked} checked)")
        return
    output.stdout.print(f"doctor {root}: {report.problems} problems, {report.warnings} warnings ({checked} checked)")
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
