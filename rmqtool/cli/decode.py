"""`rmqtool decode commitlog|consumequeue|index|checkpoint|msgid`."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import typer
from rich.text import Text

from rmqtool.cli import output
from rmqtool.errors import RmqError
from rmqtool.format.message import render_body

app = typer.Typer(help="Decode store files: commitlog, consume queues, index, checkpoint, msgIds.",
                  no_args_is_help=True)

CONFIG = typer.Option(None, "--config", help="broker.conf with the store's settings (sizes, delay levels).")
JSON = typer.Option(False, "--json", help="One JSON document.")
JSONL = typer.Option(False, "--jsonl", help="One JSON object per line.")


def _time(ms: int) -> str:
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    except (OverflowError, OSError, ValueError):
        return str(ms)


@app.command("commitlog")
def commitlog(
    store: Path = typer.Argument(..., help="Store root, or one commitlog segment file."),
    from_offset: int = typer.Option(0, "--from", min=0, help="Start at this physical offset."),
    count: int | None = typer.Option(None, "--count", min=0, help="Stop after this many messages."),
    topic: str | None = typer.Option(None, "--topic", help="Only messages of this topic."),
    verify_crc: bool = typer.Option(True, "--verify-crc/--no-verify-crc", help="Check every body CRC."),
    body: str | None = typer.Option(None, "--body", help="Body rendering: text, hex, base64 or none "
                                    "(default: base64 in JSON, text in the table)."),
    as_json: bool = JSON,
    as_jsonl: bool = JSONL,
    config: Path | None = CONFIG,
) -> None:
    """Decode every message of a commitlog, with every field.

    Corrupt records are reported as rows (or JSON objects with an `error` field) and the
    scan goes on; the exit code is 1 when any corruption was found.

    Example: [bold]rmqtool decode commitlog fixtures/store --count 5 --body text[/]
    """
    from rmqtool.io.jsonl import BODY_FORMATS
    from rmqtool.ops.log_rows import log_lines, log_rows
    from rmqtool.store.reader import open_reader

    if body is None:
        body = "base64" if as_json or as_jsonl else "text"
    if body not in BODY_FORMATS:
        raise RmqError(f"--body must be one of {', '.join(BODY_FORMATS)}, not {body!r}")
    reader = open_reader(store, config)
    selection = {"from_offset": from_offset, "count": count, "topic": topic, "verify_crc": verify_crc}
    if as_jsonl or as_json:
        corrupt = output.emit_rows(log_lines(reader, body, **selection), body, as_document=as_json)
    else:
        corrupt = _commitlog_table(log_rows(reader, **selection), body)
    if corrupt:
        raise typer.Exit(1)


def _commitlog_table(items, body: str) -> bool:
    from rmqtool.format.finding import ERROR, Finding
    corrupt = shown = 0
    cols = ["offset", "size", "topic", "queue", "qoffset", "storeTime (UTC)", "tags", "keys", "body"]
    page = output.table(None, cols)
    for item in items:
        if isinstance(item, Finding):
            corrupt += item.severity == ERROR
            page.add_row(str(item.offset), str(item.bytes),
                         Text(output.printable(f"{item.severity}: {item.reason}"), style="red"), "", "", "", "", "", "")
            continue
        for m in item.to_pylist():
            props = dict(m["properties"])
            text = _preview(m["body"][:64], body)
            page.add_row(str(m["commitLogOffset"]), str(m["storeSize"]), m["topic"], str(m["queueId"]),
                         str(m["queueOffset"]), _time(m["storeTimestamp"]), props.get("TAGS", ""),
                         props.get("KEYS", ""), (text or "") + ("…" if len(m["body"]) > 64 else ""))
            shown += 1
            if page.row_count >= 500:
                output.stdout.print(page)
                page = output.table(None, cols)
    if page.row_count or not shown:
        output.stdout.print(page)
    output.stderr.print(f"{shown} messages" + (f", [red]{corrupt} corrupt regions[/]" if corrupt else ""))
    return bool(corrupt)


def _preview(body: bytes, how: str) -> str:
    """A table cell for a body: text when it is printable UTF-8, else as asked (hex for text)."""
    if how == "none":
        return ""
    if how == "text":
        text = body.decode("utf-8", "replace")
        return text if text.isprintable() else body.hex()
    return render_body(body, how) or ""


@app.command("consumequeue")
def consumequeue(
    store: Path = typer.Argument(..., help="Store root, or one consume-queue file."),
    topic: str | None = typer.Option(None, "--topic", help="Topic of the queue."),
    queue: int | None = typer.Option(None, "--queue", min=0, help="Queue id."),
    as_json: bool = JSON,
    as_jsonl: bool = JSONL,
    config: Path | None = CONFIG,
) -> None:
    """Decode the entries of one consume queue (commitLogOffset, size, tagsCode; and the store
    timestamp a 5.x RocksDB consume queue keeps beside them).

    Example: [bold]rmqtool decode consumequeue fixtures/store --topic OrderTopic --queue 0 --jsonl[/]
    """
    from rmqtool.ops.views import queue_entries
    from rmqtool.store.reader import open_reader

    single = store.is_file()
    reader = None if single else open_reader(store, config)
    entries = queue_entries(reader, topic, queue, store if single else None)
    if as_jsonl:
        output.emit_jsonl(entries)
    elif as_json:
        output.emit_json({"topic": topic, "queueId": queue, "entries": list(entries)})
    else:
        rows = list(entries)
        names = ["queueOffset", "commitLogOffset", "size", "tagsCode"]
        if rows and "storeTimestamp" in rows[0]:
            names.append("storeTimestamp")
        page = output.table(f"{topic}/{queue}" if not single else str(store), names)
        for e in rows:
            page.add_row(*(str(e[k]) for k in names))
        output.stdout.print(page)


@app.command("timerlog")
def timerlog_cmd(
    store: Path = typer.Argument(..., help="Store root (a 5.x store with a timer/ wheel and timerlog/)."),
    resolve: bool = typer.Option(True, "--resolve/--no-resolve",
                                 help="Read the commitlog record each unit points at (msgId, topics)."),
    as_json: bool = JSON,
    as_jsonl: bool = JSONL,
    config: Path | None = CONFIG,
) -> None:
    """Decode the 5.x timer log: every unit (write time, delay, delivery time, the commitlog
    record it holds, roll/delete flags) and what it points at. Exit 1 when a segment holds bytes
    that are not units.

    Example: [bold]rmqtool decode timerlog /data/rocketmq/store --jsonl[/]
    """
    from rmqtool.format.finding import Finding
    from rmqtool.ops.timerlog import timer_units

    units, findings = [], []
    for item in timer_units(store, config, resolve):
        (findings if isinstance(item, Finding) else units).append(item)
    if as_jsonl:
        output.emit_jsonl([*units, *({"error": f.reason, "file": f.file, "offset": f.offset} for f in findings)])
    elif as_json:
        output.emit_json({"units": units, "findings": [f.to_json() for f in findings]})
    else:
        names = ["offset", "writeTime", "deliverTime", "delayMs", "flags", "commitLogOffset", "commitLogSize",
                 "msgId", "delivers to"]
        page = output.table("timer log", names)
        for u in units:
            target = u.get("target") or {}
            page.add_row(str(u["offset"]), _time(u["writeTime"]), _time(u["deliverTime"]), str(u["delayMs"]),
                         ",".join(u["flags"]) or "-", str(u["commitLogOffset"]), str(u["commitLogSize"]),
                         str(target.get("msgId", "-")),
                         str(target.get("error") or target.get("realTopic") or target.get("topic") or "-"))
        output.stdout.print(page)
        found = output.findings_table(findings)
        if found is not None:
            output.stderr.print(found)
    if any(f.severity == "error" for f in findings):
        raise typer.Exit(1)


def _file_reader(path: Path, config: Path | None):
    from rmqtool.store.config import StoreConfig
    from rmqtool.store.reader import StoreReader

    cfg, given = StoreConfig.from_file(config) if config else (StoreConfig(), set())
    return StoreReader(path, cfg, given)


@app.command("index")
def index_cmd(
    store: Path = typer.Argument(..., help="Store root, or one index file."),
    entries: bool = typer.Option(True, "--entries/--no-entries", help="List the entries too."),
    as_json: bool = JSON,
    as_jsonl: bool = JSONL,
    config: Path | None = CONFIG,
) -> None:
    """Decode index files: header, slot fill statistics, entries.

    Example: [bold]rmqtool decode index fixtures/store --no-entries[/]
    """
    from rmqtool.ops.views import index_report, index_targets

    reader = _file_reader(store, config) if store.is_file() else _store_reader(store, config)
    reports = (index_report(reader, p, entries) for p in index_targets(reader, store if store.is_file() else None))
    if as_json:
        output.emit_json({"files": list(reports)})
        return
    if as_jsonl:
        def lines():
            for r in reports:
                yield {"file": r["file"], "header": r["header"], "slots": r["slots"]}
                for e in r.get("entries", []):
                    yield {"file": r["file"], **e}
        output.emit_jsonl(lines())
        return
    for r in reports:
        output.stdout.print(output.key_values(r["name"], {**r["header"], **r["slots"]}))
        if entries:
            page = output.table(None, ["entry", "keyHash", "slot", "phyOffset", "timestamp", "prevIndex"])
            for e in r["entries"]:
                page.add_row(str(e["entry"]), str(e["keyHash"]), str(e["slot"]), str(e["phyOffset"]),
                             _time(e["timestamp"]), str(e["prevIndex"]))
            output.stdout.print(page)


def _store_reader(store: Path, config: Path | None):
    from rmqtool.store.reader import open_reader

    return open_reader(store, config)


@app.command("checkpoint")
def checkpoint_cmd(
    store: Path = typer.Argument(..., help="Store root (or the checkpoint file)."),
    as_json: bool = JSON,
) -> None:
    """Decode the checkpoint: the flush times recovery starts from.

    Example: [bold]rmqtool decode checkpoint fixtures/store --json[/]
    """
    from rmqtool.format import checkpoint
    from rmqtool.store.segments import read_file

    path = store if store.is_file() else store / "checkpoint"
    if not path.is_file():
        raise RmqError(f"{store}: no checkpoint file")
    buf = read_file(path)
    if len(buf) < 24:
        raise RmqError(f"{path}: {len(buf)} bytes is too small for a checkpoint")
    doc = checkpoint.decode(buf).to_json()
    if as_json:
        output.emit_json(doc)
    else:
        output.stdout.print(output.key_values("checkpoint", {k: f"{v}  ({_time(v)} UTC)" if "Timestamp" in k else v
                                                             for k, v in doc.items()}))


@app.command("msgid")
def msgid_cmd(
    msg_id: str = typer.Argument(..., help="An offset msgId (32 hex chars for IPv4, 56 for IPv6)."),
    as_json: bool = JSON,
) -> None:
    """Decode an offset msgId into the broker address and the physical offset.

    Example: [bold]rmqtool decode msgid C633640700002A9F0000000000000000[/]
    """
    from rmqtool.format import msgid

    host, offset = msgid.decode(msg_id)
    doc = {"msgId": msg_id.strip().upper(), "address": host.ip, "port": host.port, "storeHost": str(host),
           "commitLogOffset": offset}
    if as_json:
        output.emit_json(doc)
    else:
        output.stdout.print(output.key_values("msgId", doc))
