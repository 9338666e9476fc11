"""`rmqtool inspect STORE --phy-offset N`: one record, field by field, with byte ranges and raw hex."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output
from rmqtool.errors import EXIT_PROBLEM


def inspect(
    store: Path = typer.Argument(..., help="Store root, or one commitlog segment file.", show_default=False),
    offset: int = typer.Option(..., "--phy-offset", min=0, help="Physical offset of the record.",
                               show_default=False),
    as_json: bool = typer.Option(False, "--json", help="One JSON document."),
    config: Path | None = typer.Option(None, "--config", help="broker.conf with the store's settings.",
                                       show_default=False),
) -> None:
    """Show one record field by field with its byte range and raw hex, as a hex-editor template would.

    Fields are read as far as the bytes allow, so a corrupt record shows where it goes wrong;
    the exit code is 1 when it does.

    Example: [bold]rmqtool inspect fixtures/store --phy-offset 0[/]
    """
    from rmqtool.engine.reader import open_reader
    from rmqtool.ops.views import inspect_record

    ins = inspect_record(open_reader(store, config), offset)
    if as_json:
        output.emit_json({
            "offset": ins.offset,
            "segment": str(ins.segment.path),
            "fields": [{"name": s.name, "start": ins.offset + s.start, "end": ins.offset + s.start + s.length,
                        "length": s.length, "value": _jsonable(s.value), "note": s.note,
                        "hex": ins.raw[s.start : s.start + s.length].hex()} for s in ins.spans],
            "problem": ins.problem,
        })
    else:
        from rich.text import Text

        page = output.table(f"record at {ins.offset} in {ins.segment.path.name}",
                            ["field", "bytes", "len", "value", "raw"])
        for s in ins.spans:
            raw = ins.raw[s.start : s.start + s.length]
            hexed = " ".join(f"{b:02x}" for b in raw[:32]) + (" …" if len(raw) > 32 else "")
            value = _jsonable(s.value)
            shown = value if not isinstance(value, str) or len(value) <= 80 else value[:80] + "…"
            cell = Text(output.printable(repr(shown) if isinstance(shown, str) else shown))
            if s.note:
                cell.append(f"  {output.printable(s.note)}", style="dim")
            page.add_row(s.name, f"{ins.offset + s.start}..{ins.offset + s.start + s.length - 1}", str(s.length),
                         cell, hexed)
        output.stdout.print(page)
        if ins.problem:
            output.stderr.print(f"[red]problem:[/] {output.terminal_text(ins.problem)}")
    if ins.problem:
        raise typer.Exit(EXIT_PROBLEM)


def _jsonable(value: object) -> object:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value
