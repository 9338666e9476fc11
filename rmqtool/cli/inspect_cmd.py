"""`rmqtool inspect STORE --phy-offset N`: one record, field by field, with byte ranges and raw hex."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output, screen
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
            cell = Text(_shown(s.value, s.name))
            note = (_body_note(ins) if s.name == "body" else None) or s.note
            if note:
                cell.append(f"  {output.printable(note)}", style="dim")
            page.add_row(s.name, f"{ins.offset + s.start}..{ins.offset + s.start + s.length - 1}", str(s.length),
                         cell, hexed)
        output.stdout.print(page)
        if ins.problem:
            output.stderr.print(f"[red]problem:[/] {screen.terminal_text(ins.problem)}")
    if ins.problem:
        raise typer.Exit(EXIT_PROBLEM)


def _jsonable(value: object) -> object:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


SHOWN = 80  # characters of a long value shown


def _shown(value: object, name: str = "") -> str:
    """A field's value for a person: a string quoted, bytes (a body) by the rule of every view (UTF-8 text,
    any other byte as \\xNN), either cut to SHOWN characters; store text escaped; a time as cards show it."""
    if isinstance(value, bytes):
        n = min(len(value), SHOWN)
        while len(output.printable_bytes(value[:n], n == len(value))) > SHOWN:
            n -= 1
        return f"'{output.printable_bytes(value[:n], n == len(value))}{'…' if n < len(value) else ''}'"
    if isinstance(value, str):
        return output.printable(repr(value if len(value) <= SHOWN else value[:SHOWN] + "…"))
    return output.printable(output.shown_value(name, value))


def _body_note(ins) -> str | None:
    """What a compressed body inflates to (the body a consumer gets), or why it does not."""
    if ins.plain is None:
        return None
    if ins.plain.body is None:
        return ins.plain.error
    return f"decompressed ({ins.codec}, {len(ins.plain.body)} bytes): {_shown(ins.plain.body)}"
