"""`rmqtool diff A B` and `rmqtool hash STORE`: two replicas compared, read-only, side by side or by digest."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output
from rmqtool.errors import EXIT_PROBLEM

CONFIG = typer.Option(None, "--config", help="broker.conf of the store (of both stores for diff, unless "
                      "--config-b is given).", show_default=False)
DIFFERING_QUEUES_SHOWN = 20  # rows of the table of queues that differ; --json lists every queue


def diff(
    a: Path = typer.Argument(..., help="Store root of one replica (the master, say).", show_default=False),
    b: Path = typer.Argument(..., help="Store root of the other (the slave, say).", show_default=False),
    as_json: bool = typer.Option(False, "--json", help="One JSON document (every queue listed)."),
    config: Path | None = CONFIG,
    config_b: Path | None = typer.Option(None, "--config-b", help="broker.conf of B when it differs from A's.",
                                         show_default=False),
) -> None:
    """Compare two replicas of a store: the commitlog over the range both hold, consume queues, index keys.

    The common range is compared byte for byte; the first differing byte is named and the record
    holding it decoded on both sides. What each side holds beyond the other is shown as ranges with
    their messages and store times. Consume queues are compared as a slave rebuilds them (its filler
    entries before the first queue offset it saw are expected, not differences), and index entries
    pointing into the common range as (keyHash, phyOffset) pairs. Different segment sizes are
    refused. Exit 0 when the common range is identical (queues and index included), 1 when not.

    Example: [bold]rmqtool diff fixtures/store /tmp/store-copy[/]
    """
    from rmqtool.ops.diff import diff_stores

    doc = diff_stores(a, b, config, config_b or config)
    if as_json:
        output.emit_json(doc)
    else:
        _print_diff(doc)
    if not doc["identical"]:
        raise typer.Exit(EXIT_PROBLEM)


def hash_(
    store: Path = typer.Argument(..., help="Store root.", show_default=False),
    start: int | None = typer.Option(None, "--from", min=0, help="First commitlog offset (default: the store's "
                                     "first).", show_default=False),
    end: int | None = typer.Option(None, "--upto", min=0, help="Offset after the last byte (default: the end of "
                                   "the store's last record).", show_default=False),
    as_json: bool = typer.Option(False, "--json", help="One JSON document."),
    config: Path | None = CONFIG,
) -> None:
    """One digest (xxh3_128) of a commitlog byte range, so two hosts compare replicas without copying.

    Run it on both hosts with the same --from and --upto (the smaller of the two max offsets): equal
    digests, equal bytes. The digest depends only on the bytes of the range, not on how segment files
    split them. xxh3 runs at memory speed; it guards against corruption and divergence, not against
    forgery. A range outside what the store holds is refused, naming what it holds.

    Example: [bold]rmqtool hash fixtures/store --from 0 --upto 65536[/]
    """
    from rmqtool.ops.hashing import hash_store

    doc = hash_store(store, start, end, config).to_json()
    if as_json:
        output.emit_json(doc)
        return
    output.stdout.print(output.key_values("hash", {
        "store": doc["store"], "range": f"[{doc['from']}, {doc['upto']})", "bytes": output.size(doc["bytes"]),
        doc["algorithm"]: doc["digest"], "store holds": f"[{doc['holds']['from']}, {doc['holds']['upto']})"}))


def _side(doc: dict, side: str) -> str:
    s = doc[side]
    return f"{s['store']}  [{s['from']}, {s['upto']})"


def _held(parts: list[dict]) -> str:
    if not parts:
        return "nothing"
    return "; ".join(f"[{p['from']}, {p['upto']}) {output.size(p['bytes'])}, {output.count(p['messages'], 'message')}"
                     + (f", stored {output.iso_time(p['firstStoreTimestamp'])} .. "
                        f"{output.iso_time(p['lastStoreTimestamp'])}"
                        if p["messages"] else "") for p in parts)


def _record(r: dict) -> str:
    if "message" in r:
        m = r["message"]
        text = (f"{m['topic']}/{m['queueId']} queue offset {m['queueOffset']}, {m['storeSize']} bytes, stored "
                f"{output.iso_time(m['storeTimestamp'])}, msgId {m['msgId']}")
    elif "blank" in r:
        text = f"blank marker ({r['blank']} bytes to the segment's end)"
    else:
        text = "no record"
    return f"at {r['offset']}: {text}" + (f" ({r['problem']})" if r.get("problem") else "")


def _print_diff(doc: dict) -> None:
    common, queues, idx = doc["common"], doc["consumeQueues"], doc["index"]
    rows = {"A": _side(doc, "a"), "B": _side(doc, "b"), "segment size": str(doc["segmentSize"])}
    if common["from"] is None:
        rows["common range"] = "none: the stores hold no byte in common"
    else:
        rows["common range"] = f"[{common['from']}, {common['upto']}) {output.size(common['bytes'])}"
        if common["identical"]:
            rows["commitlog"] = "identical over the common range"
        else:
            rows["commitlog"] = f"first difference at byte {common['firstDifference']}; the logs diverge from " \
                                f"{common['divergesAt']}"
            rows["A's record"] = _record(common["records"]["a"])
            rows["B's record"] = _record(common["records"]["b"])
            if common["differingFields"]:
                rows["fields that differ"] = ", ".join(common["differingFields"])
    rows["only in A"] = _held(doc["onlyA"])
    rows["only in B"] = _held(doc["onlyB"])
    rows["consume queues"] = (f"{output.count(queues['queues'], 'queue')}: {queues['equal']} entries equal, "
                              f"{queues['expected']} expected (fillers), {queues['different']} different, "
                              f"{queues['onlyA']} only in A, {queues['onlyB']} only in B")
    rows["index"] = (f"{idx['entriesA']} entries in the common range in A, {idx['entriesB']} in B: {idx['matched']} "
                     f"matched, {idx['onlyA']} only in A, {idx['onlyB']} only in B"
                     + (f" (first at {idx['firstUnmatchedOffset']})" if idx["firstUnmatchedOffset"] is not None
                        else ""))
    if "epochs" in doc:
        ep = doc["epochs"]
        last = {side: ep[side]["epochs"][-1] if ep[side]["epochs"] else None for side in ("a", "b")}
        rows["epochs (5.x)"] = (f"A's last epoch {last['a']['epoch'] if last['a'] else '-'}, B's "
                                f"{last['b']['epoch'] if last['b'] else '-'}; the broker's consistent point: "
                                + (str(ep["consistentPoint"]) if ep["consistentPoint"] >= 0 else "none (no epoch in "
                                   "common: the broker refuses to replicate)"))
    rows["result"] = "identical over the common range (exit 0)" if doc["identical"] else "different (exit 1)"
    output.stdout.print(output.key_values("diff", rows))
    differing = [q for q in queues["perQueue"] if q["different"]]
    if differing:
        t = output.table("queues that differ", ["topic", "queue", "different", "first at", "A's entry", "B's entry"])
        for q in differing[:DIFFERING_QUEUES_SHOWN]:
            ea, eb = q["entries"]["a"], q["entries"]["b"]
            t.add_row(q["topic"], str(q["queueId"]), str(q["different"]), str(q["firstDifferent"]),
                      f"{ea['commitLogOffset']}/{ea['size']}/{ea['tagsCode']}",
                      f"{eb['commitLogOffset']}/{eb['size']}/{eb['tagsCode']}")
        output.stdout.print(t)
        if len(differing) > DIFFERING_QUEUES_SHOWN:
            output.stdout.print(f"... and {len(differing) - DIFFERING_QUEUES_SHOWN} more (--json lists every queue)")
