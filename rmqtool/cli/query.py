"""`rmqtool query STORE ...`: find messages without a broker."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import TYPE_CHECKING

import click
import typer

from rmqtool.cli import output, screen
from rmqtool.cli.times import TIME_HELP, TIME_UNIT, epoch_ms, time_window, unit_needs_a_time
from rmqtool.errors import NotFound, RmqError
from rmqtool.structures.layout import JAVA_LONG_MAX
from rmqtool.text import iso_time

if TYPE_CHECKING:
    from rmqtool.ops.query import StoreQuery


def query(
    store: Path = typer.Argument(..., help="Store root.", show_default=False),
    msg_id: str | None = typer.Option(None, "--msg-id", help="A msgId: the offset msgId, or the client msgId a "
                                      "producer got back (UNIQ_KEY); or a comma-separated list.", show_default=False),
    topic: str | None = typer.Option(None, "--topic", help="Topic (for --queue-offset and --time; for --key and "
                                     "--unique-key: without it every topic is searched).", show_default=False),
    key: str | None = typer.Option(None, "--key", help="A KEYS word or a UNIQ_KEY (as the broker's queryMessage), "
                                   "looked up in the index.", show_default=False),
    unique_key: str | None = typer.Option(None, "--unique-key", help="A UNIQ_KEY, looked up in the index.",
                                          show_default=False),
    real_topic: bool = typer.Option(False, "--real-topic", help="Also find delayed messages by REAL_TOPIC."),
    begin: str | None = typer.Option(None, "--begin", help="Keys: stored at or after this time "
                                     f"({TIME_HELP}; default: the first message).", show_default=False),
    end: str | None = typer.Option(None, "--end", help="Keys: stored at or before this time "
                                   f"({TIME_HELP}; default: the end of the store).", show_default=False),
    max_hits: int = typer.Option(64, "--max", min=1, help="Keys: index hits examined at most, per topic (the "
                                 "broker's maxNum)."),
    scan: bool = typer.Option(False, "--scan", help="Keys: scan the commitlog instead of the index."),
    queue: int | None = typer.Option(None, "--queue", min=0, help="Queue id (with --queue-offset; with --time: "
                                     "this queue only, else every queue of the topic).", show_default=False),
    offset: int | None = typer.Option(None, "--queue-offset", min=0, help="Queue offset of the message.",
                                      show_default=False),
    count: int = typer.Option(1, "--count", min=1, help="With --queue-offset: this many messages."),
    phy_offset: int | None = typer.Option(None, "--phy-offset", min=0, help="Physical (commitlog) offset.",
                                          show_default=False),
    at_time: str | None = typer.Option(None, "--time", help="Queue offset of the first message stored at or "
                                       f"after this time ({TIME_HELP}: 2026-11-25, 2026-11-25T10:30:00Z).",
                                       show_default=False),
    time_unit: str | None = TIME_UNIT,
    body: str | None = typer.Option(None, "--body", help="Body rendering (default: base64 in JSON, text otherwise).",
                                    show_default=False,
                                    click_type=click.Choice(["text", "hex", "base64", "none", "stored"])),
    as_json: bool = typer.Option(False, "--json", help="One JSON document."),
    as_jsonl: bool = typer.Option(False, "--jsonl", help="One JSON object per message."),
    full: bool = typer.Option(False, "--full", help="Every field of every hit (one card each) instead of one line "
                              "per hit."),
    config: Path | None = typer.Option(None, "--config", help="broker.conf of the store.", show_default=False),
) -> None:
    """Find messages by msgId, key, unique key, queue offset, physical offset, or a queue offset by time.

    Read-only; works while a broker runs (with a warning). Index hits are confirmed by
    reading each record, so a hash collision never comes back. Several hits are one line each
    (--full: every field). A msgId, offset, queue or topic the store does not hold: exit 3 (the
    msgIds found are still shown); a key search that finds nothing is an empty list (exit 0) with
    the reason on stderr: the key, or the --begin/--end window it is carried outside of; a search
    that stops at --max says that more may exist.

    --time without --queue answers for every queue of the topic: a row each with the queue offset
    of the first message stored at or after the time and that message (or none, past the end).
    --key or --unique-key without --topic searches every topic the store names (its consume queues,
    config/topics.json): the index under each topic, or, when the index cannot answer, a scan of the
    commitlog, said on stderr with the reason.

    Example: [bold]rmqtool query fixtures/store --config fixtures/broker.conf --topic OrderTopic --key order-3[/]

    Example: [bold]rmqtool query fixtures/store --config fixtures/broker.conf --key order-3[/]

    Example: [bold]rmqtool query fixtures/store --config fixtures/broker.conf --topic OrderTopic --time 0[/]
    """
    from rmqtool.engine.reader import open_reader
    from rmqtool.ops.query import StoreQuery
    from rmqtool.ops.query_topics import topic_queues_by_time  # start-up: the store's modules, on a query only
    from rmqtool.structures.commitlog.message import BODY_FORMATS

    unit_needs_a_time(time_unit, time=at_time, begin=begin, end=end)
    at_time = epoch_ms(at_time, "--time", time_unit)
    begin, end = time_window(begin, end, time_unit)
    begin = begin or 0
    end = JAVA_LONG_MAX if end is None else end
    if body is None:
        body = "base64" if as_json or as_jsonl else "text"
    if body not in BODY_FORMATS:
        raise RmqError(f"--body must be one of {', '.join(BODY_FORMATS)}, not {body!r}")
    asked = (("--msg-id", msg_id), ("--key", key), ("--unique-key", unique_key), ("--queue-offset", offset),
             ("--phy-offset", phy_offset), ("--time", at_time))
    kinds = [k for k, v in asked if v is not None]
    if len(kinds) != 1:
        raise RmqError("give exactly one of --msg-id, --key, --unique-key, --queue-offset, --phy-offset, --time"
                       + (f" (got {', '.join(kinds)})" if kinds else ""))
    for flag, given in (("--key", key), ("--unique-key", unique_key)):
        if given is not None and not given.strip():
            raise RmqError(f"{flag} {given!r} is empty: give the key to look for")
    if real_topic and topic is None:
        raise RmqError("--real-topic needs --topic (without it every topic is searched, SCHEDULE_TOPIC_XXXX too)")
    reader = open_reader(store, config)
    output.warn_if_locked(reader.paths)
    q = StoreQuery(reader)
    try:
        if at_time is not None:
            if queue is None:
                _queues_by_time(topic_queues_by_time(q, _need(topic, "--topic"), at_time), as_json, as_jsonl)
                return
            doc = q.offset_by_time(_need(topic, "--topic"), queue, at_time)
            if as_jsonl:
                output.emit_jsonl([doc])
            else:
                output.emit(doc, "queue offset by time", as_json)
            return
        missing: list[str] = []
        wanted = unique_key if unique_key is not None else key
        if msg_id is not None:
            ids = [m for m in msg_id.split(",") if m.strip()]
            if not ids:
                raise RmqError(f"--msg-id {msg_id!r} names no msgId")
            hits, missing = q.by_msg_ids(ids)
        elif phy_offset is not None:
            hits = [q.hit(q.record(phy_offset))]
        elif offset is not None:
            hits = q.by_queue_offset(_need(topic, "--topic"), _need(queue, "--queue"), offset, count, missing)
        elif topic is None:
            hits = _every_topic(q, wanted, unique=unique_key is not None, begin=begin, end=end, max_hits=max_hits,
                                scan=scan)
        else:
            find = q.scan_key if scan else q.by_key
            hits = find(_need(topic, "--topic"), wanted, unique=unique_key is not None, begin=begin, end=end,
                        max_hits=max_hits, real_topic=real_topic)
            if not hits:
                output.note("0 messages: " + q.why_no_hits(topic, wanted, unique=unique_key is not None, begin=begin,
                                                           end=end, max_hits=max_hits, scan=scan,
                                                           real_topic=real_topic))
        from rmqtool.ops.consumers import Consumption

        consumption = Consumption(reader.paths.root)
        _show(hits, body, "json" if as_json else "jsonl" if as_jsonl else "full" if full else "lines", consumption,
              q.matched)
        if consumption.error:
            output.warn(f"consumed or not is not shown: {screen.terminal_text(consumption.error)}")
        if q.limited:
            output.note(f"stopped at --max {max_hits} hits: more messages may carry {wanted!r} (raise --max)")
        if missing:
            raise NotFound("; ".join(missing))
    finally:
        for skipped in q.skipped.values():
            output.warn(skipped)
        q.close()


def _every_topic(q: StoreQuery, key: str, **how) -> list:
    """A key searched in every topic: the hits, and on stderr why it scanned when it did, or why none."""
    from rmqtool.ops.query_topics import key_in_every_topic, why_none_anywhere  # start-up: on a query only

    search = key_in_every_topic(q, key, **how)
    for warning in search.warnings:
        output.warn(screen.terminal_text(warning))
    if search.scanned_because is not None:
        output.note(f"scanned the commitlog instead of the index: {screen.terminal_text(search.scanned_because)}")
    if not search.hits:
        output.note("0 messages: " + screen.terminal_text(why_none_anywhere(q, search, key, **how)))
    return search.hits


def _queues_by_time(rows: list[dict], as_json: bool, as_jsonl: bool) -> None:
    """A row per queue of the topic: JSON lines, one document, or a table (a queue past its end says so; one
    whose entries cannot be read says why, and the command ends not found)."""
    if as_jsonl:
        output.emit_jsonl(rows)
    elif as_json:
        output.emit_json({"topic": rows[0]["topic"], "timestamp": rows[0]["timestamp"], "queues": rows})
    else:
        when = iso_time(rows[0]["timestamp"])
        t = output.table(f"{rows[0]['topic']}: the first message stored at or after {when}, per queue",
                         ["queue", "queueOffset", "min..max", "phyOffset", "storeTimestamp", "msgId"])
        for r in rows:
            if "problem" in r:
                t.add_row(str(r["queueId"]), "-", f"{r['minOffset']}..{r['maxOffset']}", "-", "-", "-")
            elif "commitLogOffset" in r:
                t.add_row(str(r["queueId"]), str(r["queueOffset"]), f"{r['minOffset']}..{r['maxOffset']}",
                          str(r["commitLogOffset"]), iso_time(r["storeTimestamp"]), r["msgId"])
            else:
                t.add_row(str(r["queueId"]), f"{r['queueOffset']} (past the end)",
                          f"{r['minOffset']}..{r['maxOffset']}", "-", f"none at or after {when}", "-")
        output.stdout.print(t)
    problems = [f"queue {r['queueId']}: {r['problem']}" for r in rows if "problem" in r]
    if problems:
        raise NotFound("; ".join(problems))


def _need(value, flag: str):
    if value is None:
        raise RmqError(f"this query needs {flag}")
    return value


def _show(hits, body: str, how: str, consumption, matched: dict[int, str]) -> None:
    """Hits as one JSON document, JSON lines, one line each (one hit: its card), or cards; each with
    the groups that have (or have not yet) consumed it and, for a key search, the property its key matched."""
    def doc(hit) -> dict:
        out = hit.to_json(body)
        if hit.message.physical_offset in matched:
            out["matchedBy"] = matched[hit.message.physical_offset]
        status = consumption.of(hit.message)
        return out if status is None else {**out, "consumption": status}

    if how == "json":
        output.emit_json({"messages": [doc(h) for h in hits]})
    elif how == "jsonl":
        output.emit_jsonl(doc(h) for h in hits)
    elif how == "lines" and len(hits) > 1:
        from rmqtool.cli.messages import message_table

        message_table([[h.to_json("base64") for h in hits]], body)
        _consumption_table(hits, consumption)
        _matched_note(hits, matched)
    else:
        for h in hits:
            card = _card(h, body)
            status = consumption.of(h.message)
            if status is not None:
                card["consumed by"] = _consumed_words(status)
            if h.message.physical_offset in matched:
                card["matched by"] = matched[h.message.physical_offset]
            output.stdout.print(output.key_values(f"message {card['msgId']}", card))


def _matched_note(hits, matched: dict[int, str]) -> None:
    """Which property a key search matched, counted: "key matched by KEYS in 2 messages, by UNIQ_KEY in 1"."""
    counts: dict[str, int] = {}
    for h in hits:
        field = matched.get(h.message.physical_offset)
        if field is not None:
            counts[field] = counts.get(field, 0) + 1
    if counts:
        output.note("key matched " + ", ".join(f"by {f} in {n} message{'s' if n > 1 else ''}"
                                               for f, n in sorted(counts.items())))


def _consumed_words(status: dict) -> str:
    """"billing: consumed (committed 250); audit: not yet (committed 12)"; a delayed message's delivery."""
    words = [f"{g['group']}: {'consumed' if g['consumed'] else 'not yet'} (committed {g['committedOffset']})"
             for g in status.get("groups", [])]
    if "delivered" in status:
        words.append(f"schedule service: {'delivered' if status['delivered'] else 'not delivered yet'} (level "
                     f"{status['delayLevel']} next offset {status['deliverOffset']})")
    return "; ".join(words)


def _consumption_table(hits, consumption) -> None:
    t = output.table("consumed by", ["phyOffset", "topic", "queue", "queueOffset", "status"])
    for h in hits:
        status = consumption.of(h.message)
        if status is not None:
            m = h.message
            t.add_row(str(m.physical_offset), m.topic, str(m.queue_id), str(m.queue_offset), _consumed_words(status))
    if t.row_count:
        output.stdout.print(t)


def _card(hit, body: str) -> dict:
    """Every field of a hit for a person: body as text or as asked, sysFlag in words (the card writes times)."""
    from rmqtool.structures.commitlog import sysflag

    doc = hit.to_json(body)
    if body == "text":  # UTF-8 text, any other byte as \xNN (never raw to the terminal)
        doc["body"] = output.printable_bytes(base64.b64decode(hit.to_json("base64")["body"]), whole=True)
    elif doc.get("body") is None:
        doc["body"] = f"({body}: not shown)"
    doc["properties"] = ", ".join(f"{k}={v}" for k, v in doc["properties"].items())
    doc.pop("propertiesString")
    words = sysflag.describe(doc["sysFlag"])
    doc["sysFlag"] = f"{doc['sysFlag']} ({', '.join(words)})" if words else doc["sysFlag"]
    return doc
