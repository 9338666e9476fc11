"""`rmqtool decode commitlog|consumequeue|index|checkpoint|epoch|timerlog|config|msgid`."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import typer

from rmqtool.cli import output, screen, selecting
from rmqtool.cli.grid import Column
from rmqtool.cli.messages import message_table
from rmqtool.cli.times import TIME_UNIT
from rmqtool.errors import EXIT_PROBLEM, NotFound, RmqError

app = typer.Typer(help="Decode store files: commitlog, consume queues, index, checkpoint, msgIds."
                  "\n\nExample: [bold]rmqtool decode commitlog fixtures/store --count 5[/]",
                  no_args_is_help=True)

CONFIG = typer.Option(None, "--config", help="broker.conf with the store's settings (sizes, delay levels).",
                      show_default=False)
JSON = typer.Option(False, "--json", help="One JSON document.")
JSONL = typer.Option(False, "--jsonl", help="One JSON object per line.")


@app.command("commitlog")
def commitlog(
    store: Path = typer.Argument(..., help="Store root, or one commitlog segment file.", show_default=False),
    from_offset: int | None = typer.Option(None, "--phy-offset", min=0, show_default=False,
                                           help="Start at this physical offset (default: 0; with --follow: the "
                                           "log's end)."),
    count: int | None = typer.Option(None, "--count", min=0, help="Stop after this many (selected) messages.",
                                     show_default=False),
    topic: str | None = selecting.TOPIC,
    queue: int | None = selecting.QUEUE,
    tag: str | None = selecting.TAG,
    key: str | None = selecting.KEY,
    begin: str | None = selecting.BEGIN,
    end: str | None = selecting.END,
    time_unit: str | None = TIME_UNIT,
    verify_crc: bool = typer.Option(True, "--verify-crc/--no-verify-crc", help="Check every body CRC, and the "
                                    "fields it does not cover that no broker writes."),
    body: str | None = typer.Option(None, "--body", help="Body rendering (default: base64 in JSON, text in the "
                                    "table).", show_default=False,
                                    click_type=click.Choice(["text", "hex", "base64", "none", "stored"])),
    as_json: bool = JSON,
    as_jsonl: bool = JSONL,
    follow: bool = typer.Option(False, "--follow", help="Keep printing messages as they are written, across "
                                "segments (read-only, without the lock); Ctrl-C ends."),
    config: Path | None = CONFIG,
) -> None:
    """Decode every message of a commitlog, with every field; or those of a topic, queue, tag, key or time range.

    Corrupt records are reported as rows (or JSON objects with an `error` field) and the
    scan goes on; the exit code is 1 when any corruption was found. --topic, --queue, --tag, --key,
    --begin and --end select together (a message must match them all; --count counts the selected ones);
    a selection that keeps nothing exits 3 naming the filter that excluded everything. With --follow,
    the messages written from now on (or from --phy-offset) are printed as they arrive, each once it is
    whole, until Ctrl-C (exit 0) or --count.

    Example: [bold]rmqtool decode commitlog fixtures/store --count 5 --body text[/]

    Example: [bold]rmqtool decode commitlog fixtures/store --topic OrderTopic --tag TagA --jsonl[/]
    """
    from rmqtool.engine.reader import open_reader
    from rmqtool.io.jsonl import BODY_FORMATS
    from rmqtool.ops.follow import follow_lines, follow_rows
    from rmqtool.ops.log_rows import Tally, bodies_for, hole_note, log_lines, log_rows

    if body is None:
        body = "base64" if as_json or as_jsonl else "text"
    if body not in BODY_FORMATS:
        raise RmqError(f"--body must be one of {', '.join(BODY_FORMATS)}, not {body!r}")
    if follow and as_json:
        raise RmqError("--follow prints messages as they come: use --jsonl (or the table), not --json")
    chosen = selecting.selection_of(topic, queue, tag, key, begin, end, time_unit)
    reader = open_reader(store, config)
    for said in (reader.start_note, hole_note(reader, from_offset)):  # a renamed segment; a start in a hole
        if said is not None:
            output.note(said)
    reading = {"from_offset": from_offset if follow else from_offset or 0, "count": count,
               "selection": chosen if chosen.narrows else None, "verify_crc": verify_crc}
    lines, rows = (follow_lines, follow_rows) if follow else (log_lines, log_rows)
    tally = Tally()
    if not follow:
        reading["tally"] = tally
    try:
        if as_jsonl or as_json:
            corrupt = output.emit_rows(lines(reader, body, **reading), body, as_document=as_json, flush=follow)
        else:
            log_end = reader.segments[-1].start + reader.segments[-1].size if reader.segments else 0
            corrupt = message_table(rows(reader, bodies=bodies_for(body), **reading), body, len(str(log_end)),
                                    follow=follow)
    except KeyboardInterrupt:
        if not follow:
            raise
        return  # Ctrl-C is how a follow ends
    if corrupt:
        raise typer.Exit(EXIT_PROBLEM)
    empty = None if follow else tally.why_empty(reader, from_offset, chosen, count)
    if empty is not None:
        raise NotFound(empty)


@app.command("consumequeue")
def consumequeue(
    store: Path = typer.Argument(..., help="Store root, or one consume-queue file.", show_default=False),
    topic: str | None = typer.Option(None, "--topic", help="Topic of the queue.", show_default=False),
    queue: int | None = typer.Option(None, "--queue", min=0, help="Queue id.", show_default=False),
    as_json: bool = JSON,
    as_jsonl: bool = JSONL,
    config: Path | None = CONFIG,
) -> None:
    """Decode the entries of one consume queue (commitLogOffset, size, tagsCode; and the store
    timestamp a 5.x RocksDB consume queue keeps beside them).

    Example: [bold]rmqtool decode consumequeue fixtures/store --topic OrderTopic --queue 0 --jsonl[/]
    """
    from rmqtool.engine.reader import open_reader
    from rmqtool.ops.views import queue_entries

    single = store.is_file()
    reader = None if single else open_reader(store, config)
    entries = queue_entries(reader, topic, queue, store if single else None)
    if as_jsonl:
        output.emit_jsonl(entries)
    elif as_json:
        output.emit_json({"topic": topic, "queueId": queue, "entries": list(entries)})
    else:
        _entries_table(f"{topic}/{queue}" if not single else str(store), entries)


def _entries_table(title: str, entries) -> None:
    """Consume-queue entries as a streaming table, 4096 rows at a time."""
    from itertools import islice

    from rmqtool.cli.grid import paged, write_table

    first = next(entries, None)
    names = ["queueOffset", "commitLogOffset", "size", "tagsCode"]
    if first is not None and "storeTimestamp" in first:
        names.append("storeTimestamp")

    def parts():
        chunk = [first] if first is not None else []
        while chunk:
            yield [output.iso_times(e[n] for e in chunk) if n == "storeTimestamp" else [e[n] for e in chunk]
                   for n in names]
            chunk = list(islice(entries, 4096))

    output.note(title)
    with paged() as out:
        shown = write_table(out, [Column(n, 4, right=True) for n in names], parts())
    output.note(f"{shown} entries")


@app.command("timerlog")
def timerlog_cmd(
    store: Path = typer.Argument(..., help="Store root (a 5.x store with a timer/ wheel and timerlog/).",
                                 show_default=False),
    resolve: bool = typer.Option(True, "--resolve/--no-resolve",
                                 help="Read the commitlog record each unit points at (msgId, topics)."),
    as_json: bool = JSON,
    as_jsonl: bool = JSONL,
    config: Path | None = CONFIG,
) -> None:
    """Decode the 5.x timer log: every unit and the message it points at.

    Each unit's write time, delay, delivery time, the commitlog record it holds and its
    roll/delete flags, and what that record is (--resolve). Exit 1 when a segment holds bytes
    that are not units. The example reads a 5.x broker's store at its default root, ~/store
    (fixtures/store is a 4.x store without a timer log).

    Example: [bold]rmqtool decode timerlog ~/store --jsonl[/]
    """
    from rmqtool.ops.timers import timer_log
    from rmqtool.report import Finding

    units, findings = [], []
    for item in timer_log(store, config, resolve):
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
            page.add_row(str(u["offset"]), output.iso_time(u["writeTime"]), output.iso_time(u["deliverTime"]),
                         str(u["delayMs"]),
                         ",".join(u["flags"]) or "-", str(u["commitLogOffset"]), str(u["commitLogSize"]),
                         str(target.get("msgId", "-")),
                         str(target.get("error") or target.get("realTopic") or target.get("topic") or "-"))
        output.stdout.print(page)
        found = output.findings_table(findings)
        if found is not None:
            output.stderr.print(found)
    if any(f.severity == "error" for f in findings):
        raise typer.Exit(EXIT_PROBLEM)


def _file_reader(path: Path, config: Path | None):
    from rmqtool.engine.config import StoreConfig
    from rmqtool.engine.recognition import require_file
    from rmqtool.structures.index.files import IndexFiles

    require_file(path, "index file")
    cfg, given = StoreConfig.from_file(config) if config else (StoreConfig(), set())
    return IndexFiles(cfg, given)


@app.command("index")
def index_cmd(
    store: Path = typer.Argument(..., help="Store root, or one index file.", show_default=False),
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
    from rmqtool.cli.grid import write_table

    columns = [Column(n, 4, right=True) for n in ("entry", "keyHash", "slot", "phyOffset", "timestamp",
                                                  "prevIndex")]
    for r in reports:
        output.stdout.print(output.key_values(r["name"], {**r["header"], **r["slots"]}))
        if entries:
            rows = r["entries"]
            output.stdout.file.flush()
            write_table(sys.stdout, columns, [[[e["entry"] for e in rows], [e["keyHash"] for e in rows],
                                            [e["slot"] for e in rows], [e["phyOffset"] for e in rows],
                                            output.iso_times(e["timestamp"] for e in rows),
                                            [e["prevIndex"] for e in rows]]])


def _store_reader(store: Path, config: Path | None):
    from rmqtool.engine.reader import open_reader

    return open_reader(store, config)


@app.command("checkpoint")
def checkpoint_cmd(
    store: Path = typer.Argument(..., help="Store root (or the checkpoint file).", show_default=False),
    as_json: bool = JSON,
) -> None:
    """Decode the checkpoint: the flush times recovery starts from.

    Example: [bold]rmqtool decode checkpoint fixtures/store --json[/]
    """
    from rmqtool.engine.recognition import require_file
    from rmqtool.files.segments import read_file
    from rmqtool.structures import checkpoint

    path = store if store.is_file() else store / "checkpoint"
    if not path.is_file():
        raise RmqError(f"{store}: no checkpoint file")
    require_file(path, "checkpoint")
    buf = read_file(path)
    doc = checkpoint.decode(buf).to_json()
    if as_json:
        output.emit_json(doc)
    else:
        output.stdout.print(output.key_values("checkpoint", doc))


@app.command("epoch")
def epoch_cmd(
    store: Path = typer.Argument(..., help="Store root (or one epoch file).", show_default=False),
    as_json: bool = JSON,
) -> None:
    """Decode the replication state of a 5.x broker in controller mode: its epochs and its identity.

    The epochs are read as the broker loads them: epochFileCheckpoint, or its .bak when the file is
    missing, holds no entries or fails its count or CRC check (said so); each epoch ends where the next
    one starts. brokerIdentity (and brokerIdentity-temp, a registration under way) and the checkpoint's
    masterFlushedOffset and confirmPhyOffset are shown beside them. Exit 1 when a file the broker reads
    is damaged or an identity file is not loaded.

    Example: [bold]rmqtool decode epoch ~/store --json[/]
    """
    from rmqtool.structures import epoch
    from rmqtool.structures.config.persist import BAK, sibling
    from rmqtool.structures.epoch.state import HaState, ha_state

    if store.is_dir():
        state = ha_state(store)
        if not state.present:
            raise RmqError(f"{store}: no {epoch.FILE}, brokerIdentity or 5.x checkpoint longs "
                           "(not the store of a 5.x broker in controller mode)")
    elif store.exists() or sibling(store, BAK).exists():
        state = HaState(epoch.load(store), None, None)
    else:
        raise RmqError(f"{store}: no such file or directory")
    if as_json:
        output.emit_json(state.to_json())
    else:
        _ha_state(state)
    if any(f.severity == "error" for f in state.findings):
        raise typer.Exit(EXIT_PROBLEM)


def _ha_state(state) -> None:
    """The HA state for a person: each epoch file, the epochs the broker keeps, the identities, the offsets."""
    loaded = state.epochs
    if loaded is not None:
        summary = {"loaded from": loaded.source.name if loaded.source else "nothing (the broker has no epochs)"}
        if not loaded.broker_starts:
            summary["broker"] = "does not start: a line that must be a number is not one"
        for f in (loaded.file, loaded.bak):
            crc = "not checked (0)" if f.crc == 0 else f"{f.crc} (entries: {f.entries_crc})"
            summary[f.path.name] = (f"{f.count} entries declared, {len(f.entries)} read, CRC {crc}"
                                    if f.count is not None else "present" if f.present else "absent")
        output.stdout.print(output.key_values(str(loaded.file.path), summary))
        t = output.table("epochs", ["epoch", "start offset", "end offset"])
        for e in loaded.entries:
            t.add_row(str(e.epoch), str(e.startOffset), "open" if e.endOffset is None else str(e.endOffset))
        output.stdout.print(t if t.row_count else "no epochs")
    for ident in (state.identity, state.identity_temp):
        if ident is not None:
            doc = ident.to_json()
            output.stdout.print(output.key_values(str(ident.path), {k: str(v) for k, v in doc.items()
                                                                    if k != "file" and v is not None}))
    offsets = {k: str(v) for k, v in (("masterFlushedOffset", state.masterFlushedOffset),
                                      ("confirmPhyOffset", state.confirmPhyOffset)) if v is not None}
    if offsets:
        output.stdout.print(output.key_values("checkpoint (5.x)", offsets))
    found = output.findings_table(state.findings, show_all=True)
    if found is not None:
        output.stderr.print(found)


@app.command("config")
def config_cmd(
    store: Path = typer.Argument(..., help="Store root (or one config file).", show_default=False),
    file: str | None = typer.Argument(None, help="Only this file of config/ (e.g. consumerOffset.json).",
                                      show_default=False),
    as_json: bool = JSON,
) -> None:
    """Decode the broker's config/ files: topics, consumer offsets, delay offsets, subscription groups.

    Each file is read as the broker loads it: the file itself, or its .bak when the file is empty
    or broken (said so). Integer map keys written without quotes (consumerOffset.json,
    delayOffset.json) are read as the broker reads them. A .bak is compared with its file (what the
    last write changed), and a .tmp left by an interrupted write is reported. Exit 1 when a file
    cannot be loaded at all.

    Example: [bold]rmqtool decode config ~/store consumerOffset.json[/]
    """
    from rmqtool.structures.config import catalog

    if store.is_file():
        files = [catalog.describe(store)]
    elif not store.is_dir():
        raise RmqError(f"{store}: no such file or directory")
    else:
        files = catalog.describe_all(store, file)
    if as_json:
        output.emit_json({"files": [f.to_json() for f in files]})
    else:
        for item in files:
            _config_file(item)
        if not files:
            output.note(f"0 config files in {catalog.config_dir(store)}")
    if any(f.source is None and f.error for f in files):
        raise typer.Exit(EXIT_PROBLEM)


def _config_file(item) -> None:
    """One config file for a person: where it loads from, its .bak and .tmp, then its content."""
    from rmqtool.structures.config import delayoffsets, fastjson, offsets, persist

    doc = item.to_json()
    bak = item.bak
    summary = {"role": doc["role"], "loaded from": doc["loadedFrom"] or "nothing (the table starts empty)",
               ".bak": "absent" if bak is None else "same as the file" if bak["sameAsFile"] else
               f"{len(bak.get('differences', [])) + bak.get('moreDifferences', 0)} difference(s) from the file",
               ".tmp": "present" if item.tmp else "absent"}
    if item.error:
        summary["error"] = item.error
    for i, text in enumerate(item.notes):
        summary[f"note {i + 1}" if len(item.notes) > 1 else "note"] = text
    output.stdout.print(output.key_values(str(item.path), summary))
    if bak and bak.get("differences"):
        t = output.table("what the last write changed (.bak -> file)", ["where: before -> after"])
        for line in bak["differences"]:
            t.add_row(line)
        output.stdout.print(t)
    content = item.document if isinstance(item.document, dict) else None
    if content is None:
        return
    loaded = persist.Loaded(item.path, content, item.source)
    if item.name == offsets.FILE:
        t = output.table(None, ["group", "topic", "queue", "committed offset"])
        for c in offsets.ConsumerOffsets(loaded).entries():
            for qid, at in sorted(c.queues.items()):
                t.add_row(c.group, c.topic, str(qid), str(at))
        output.stdout.print(t if t.row_count else "no committed offsets")
    elif item.name == delayoffsets.FILE:
        t = output.table(None, ["delay level", "schedule queue", "next offset to deliver"])
        for level, at in sorted(delayoffsets.of_loaded(loaded).levels.items()):
            t.add_row(str(level), str(level - 1), str(at))
        output.stdout.print(t if t.row_count else "no delay level delivered yet")
    else:
        output.stdout.print(screen.terminal_text(fastjson.dumps(content)))


@app.command("msgid")
def msgid_cmd(
    msg_id: str = typer.Argument(..., help="A msgId: an offset msgId (32 hex chars for IPv4, 56 for IPv6) or the "
                                 "client msgId a producer gets back (UNIQ_KEY, 32 hex chars).", show_default=False),
    as_json: bool = JSON,
) -> None:
    """Decode a msgId: an offset msgId into the broker address and the physical offset; a client msgId
    (UNIQ_KEY) into the producer's address, process id and counter.

    Example: [bold]rmqtool decode msgid C633640700002A9F0000000000000000[/]
    """
    from rmqtool.structures.commitlog import msgid

    doc = msgid.describe(msg_id)
    if as_json:
        output.emit_json(doc)
        return
    output.stdout.print(output.key_values("msgId", doc))
    if doc["kind"] == "client":
        output.note(f"a client msgId names no offset: find the message with `rmqtool query STORE --msg-id "
                    f"{doc['msgId']}` (or --unique-key {doc['msgId']}, in every topic)")
