"""`rmqtool info STORE`: the store at a glance (read-only)."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output
from rmqtool.cli.grid import Column
from rmqtool.cli.output import duration, iso_time


def info(
    store: Path = typer.Argument(..., help="Store root.", show_default=False),
    as_json: bool = typer.Option(False, "--json", help="One JSON document."),
    config: Path | None = typer.Option(None, "--config", help="broker.conf of the store.", show_default=False),
    no_chart: bool = typer.Option(False, "--no-chart", help="Leave out the timeline chart (a pipe never has it)."),
) -> None:
    """Show a store at a glance: its kind, commitlog extent, topics, consume queues, index and checkpoint.

    What kind of store this is (and why), its commitlog extent and store times, every consume
    queue's offset range, each topic's messages, bytes and first and last store time (what its
    consume queues hold), the index files, the checkpoint against the data, and whether an abort
    file is present or a process holds the lock; for a 5.x broker in controller mode, its epochs,
    its broker identity and the checkpoint's HA offsets. Disk use: the bytes each structure's files
    take (allocated, as du counts, and apparent, as ls -l counts) and each topic's share of the
    commitlog (its queue entries' sizes). Reads the first and last segment, the consume queues and
    the index headers only, and stats every file. In a terminal the timeline (messages per time
    bucket, found from the consume queues; entries whose records the log lacks are counted apart) is
    drawn under the summary.

    Example: [bold]rmqtool info fixtures/store --json | jq .disk[/]
    """
    from rmqtool.ops.info import store_info

    doc = store_info(store, config)
    if as_json:
        output.emit_json(doc)
        return
    log, queues, idx, cp = doc["commitlog"], doc["consumeQueues"], doc["index"], doc["checkpoint"]
    summary = {
        "store": doc["store"],
        "kind": f"{doc['label']} [{doc['kind']}]" + ("" if doc["writable"] else " (read-only for rmqtool)"),
        "evidence": "; ".join(doc["evidence"]),
        "commitlog": f"{log['segments']} segment(s) of {log['segmentSize']} bytes",
        "physical offsets": f"{log.get('firstOffset', '-')} .. {log.get('endOffset', '-')}",
        **({"holes": "; ".join(_hole(h) for h in log["holes"])} if log["holes"] else {}),
        "first store time": iso_time(log.get("firstStoreTimestamp")),
        "last store time": iso_time(log.get("lastStoreTimestamp")),
        "consume queues": f"{queues['queueCount']} queue(s), {queues['form']}"
                          + (f", files of {queues['fileSize']} bytes" if "fileSize" in queues else ""),
        "messages in queues": _messages(doc),
        "index": f"{idx['files']} file(s)" + (f" of {idx['fileSize']} bytes, {idx['entries']} entries, "
                                              f"{iso_time(idx['firstBeginTimestamp'])} .. "
                                              f"{iso_time(idx['lastEndTimestamp'])}"
                                              if idx["files"] else ""),
        "checkpoint": (f"physic {iso_time(cp['physicMsgTimestamp'])}, logics {iso_time(cp['logicsMsgTimestamp'])}, "
                       f"index {iso_time(cp['indexMsgTimestamp'])}" if cp["present"] else "absent"),
        "abort file": "present: the last writer did not shut down cleanly" if doc["abortFile"] else "absent",
        **({"rebuild": "a swap was stopped half way: the next writer (or `rmqtool rebuild`) finishes it"}
           if doc["unfinishedSwap"] else {}),
        **({"interrupted write": _interrupted(doc["interruptedWrite"])} if doc["interruptedWrite"] else {}),
        "lock": f"held by process {doc['lockHeldBy']}" if doc["lockHeldBy"] else "free",
    }
    if "physicBehindDataMs" in cp:
        summary["checkpoint vs data"] = _behind(cp['physicBehindDataMs'])
    for name, part in doc.get("timerFiles", {}).items():
        summary[name] = ", ".join(f"{k} {v}" for k, v in part.items())
    if "ha" in doc:
        summary.update(_ha_lines(doc["ha"]))
    output.stdout.print(output.key_values("store", summary))
    if not no_chart:
        _chart(doc["timeline"])
    _topic_tables(queues["topics"])
    _disk_tables(doc["disk"])


# `keep`: on a narrow terminal the lowest goes first; a long topic name shrinks (`crowds`) for the messages and the
# first and last store time, but a name of at most 16 stays whole (`whole`): at 60 columns the last store time goes
_TOPIC_COLUMNS = [Column("topic", 16, least=8, keep=9, whole=True), Column("queues", 6, right=True, keep=3),
                  Column("msgs", 4, right=True, keep=8, crowds=True), Column("bytes", 5, right=True, keep=4),
                  Column("first stored", 24, least=20, keep=7, crowds=True),
                  Column("last stored", 24, least=20, keep=6, crowds=True)]
_QUEUE_COLUMNS = [Column("topic", 16, least=12, keep=9, whole=True),
                  Column("queue", 5, right=True, keep=8, crowds=True),
                  Column("min offset", 10, right=True, keep=6, crowds=True),
                  Column("max offset", 10, right=True, keep=7, crowds=True),
                  Column("messages", 8, right=True, keep=5, crowds=True)]


def _chart(timeline: dict) -> None:
    """The timeline as bars, only on a terminal (a pipe gets the tables alone)."""
    import sys

    from rmqtool.cli.screen import screen_width
    from rmqtool.cli.timechart import chart_lines

    if not sys.stdout.isatty():
        return
    lines = chart_lines(timeline, screen_width(sys.stdout))
    if lines:
        sys.stdout.write("\n".join(lines) + "\n\n")


def _topic_tables(topics: list[dict]) -> None:
    """Each topic as its consumers see it, then each consume queue: line tables fitted to the terminal."""
    import sys

    from rmqtool.cli.grid import write_table

    sys.stdout.write("topics (as their consumers see them)\n")
    write_table(sys.stdout, _TOPIC_COLUMNS, [[
        [t["topic"] for t in topics], [len(t["queues"]) for t in topics], [t["messages"] for t in topics],
        [t["bytes"] for t in topics], [iso_time(t["firstStoreTimestamp"]) for t in topics],
        [iso_time(t["lastStoreTimestamp"]) for t in topics]]] if topics else [], every_field="--json")
    rows = [(t["topic"], q) for t in topics for q in t["queues"]]
    sys.stdout.write("\nconsume queues\n")
    write_table(sys.stdout, _QUEUE_COLUMNS, [[
        [t for t, _ in rows], [q["queueId"] for _, q in rows], [q["minOffset"] for _, q in rows],
        [q["maxOffset"] for _, q in rows], [q["maxOffset"] - q["minOffset"] for _, q in rows]]] if rows else [],
        every_field="--json")

# a long topic name shrinks for the bytes, their share and the messages; a structure's name never needs to
_DISK_COLUMNS = [Column("structure", 16, least=8, keep=9), Column("files", 5, right=True, keep=5),
                 Column("allocated", 9, right=True, keep=8, crowds=True),
                 Column("apparent", 8, right=True, keep=7, crowds=True)]
_SHARE_COLUMNS = [Column("topic", 16, least=8, keep=9, whole=True),
                  Column("messages", 8, right=True, keep=6, crowds=True),
                  Column("bytes", 5, right=True, keep=8, crowds=True),
                  Column("share", 6, right=True, keep=7, crowds=True)]


def _disk_tables(disk: dict) -> None:
    """Bytes on disk per structure (allocated as `du` counts, apparent as `ls` does), then each topic's share
    of the commitlog's records and what no queue entry accounts for."""
    import sys

    from rmqtool.cli.grid import write_table

    parts = disk["parts"] + [{"name": "total", "files": disk["files"], "allocatedBytes": disk["allocatedBytes"],
                              "apparentBytes": disk["apparentBytes"]}]
    sys.stdout.write("\ndisk use in bytes (allocated: as du counts; apparent: ls -l)\n")
    write_table(sys.stdout, _DISK_COLUMNS, [[[p["name"] for p in parts], [p["files"] for p in parts],
                                            [p["allocatedBytes"] for p in parts],
                                            [p["apparentBytes"] for p in parts]]], every_field="--json")
    share = disk["commitlogTopics"]
    topics = share["topics"]
    data = share["logDataBytes"]
    sys.stdout.write("\ncommitlog by topic (record bytes, from queue entries)\n")
    write_table(sys.stdout, _SHARE_COLUMNS, [[[t["topic"] for t in topics], [t["messages"] for t in topics],
                                             [t["bytes"] for t in topics],
                                             [_percent(t["bytes"], data) for t in topics]]] if topics else [],
                every_field="--json")
    if share["unattributedBytes"]:
        import textwrap

        from rmqtool.cli.screen import screen_width

        note = (f"no topic: {share['unattributedBytes']} bytes ({_percent(share['unattributedBytes'], data)} of the "
                f"log's {data}) no queue entry points at (records without one, segment-end blanks)")
        sys.stdout.write(textwrap.fill(note, min(screen_width(sys.stdout), 1 << 16)) + "\n")


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _ha_lines(ha: dict) -> dict:
    """A 5.x broker's replication state as rows of the store table."""
    out = {}
    epochs = ha["epochFile"]
    if epochs is not None:
        text = (f"{epochs['epochs']}, the last {epochs['lastEpoch']} from offset {epochs['lastStartOffset']}"
                if epochs["epochs"] else "none")
        if epochs["loadedFrom"] not in (None, "epochFileCheckpoint"):
            text += f" (loaded from {epochs['loadedFrom']})"
        out["epochs"] = text if epochs["brokerStarts"] else text + "; the broker does not start on this file"
    for key, label in (("brokerIdentity", "broker identity"), ("brokerIdentityTemp", "broker identity (temp)")):
        who = ha[key]
        if who is not None:
            out[label] = (f"cluster {who['clusterName']}, broker {who['brokerName']}, id {who['brokerId']}"
                          if who["loaded"] else f"not loaded: {who['problem']}")
    if ha["masterFlushedOffset"] is not None:
        out["HA offsets"] = (f"masterFlushedOffset {ha['masterFlushedOffset']}, "
                             f"confirmPhyOffset {ha['confirmPhyOffset']}")
    for i, f in enumerate(ha["findings"]):
        out[f"HA {f['severity']} {i + 1}"] = f"{Path(f['file']).name}: {f['reason']}"
    return out


def _messages(doc: dict) -> str:
    """"400", or what the log holds of them when some entries point where no segment file has the record:
    "400 entries; the log holds 233 of their records (167 point into 68536 .. 131072, which no segment holds)"."""
    missing = doc["timeline"]["uncounted"]
    if not missing["messages"]:
        return str(doc["messagesInQueues"])
    return (f"{doc['messagesInQueues']} entries; the log holds {doc['recordsInLog']} of their records "
            f"({missing['messages']} point into {uncounted_ranges(missing['ranges'])})")


def uncounted_ranges(ranges: list[dict]) -> str:
    """"68536 .. 131072, which no segment holds" and "past the log's end at 151686", joined."""
    return "; ".join(f"{r['from']} .. {r['to']}, which no segment holds" if r["to"] is not None
                     else f"past the log's end at {r['from']}" for r in ranges)


def _hole(hole: dict) -> str:
    """"65536 .. 131072 (segment 00000000000000065536 missing)", "0 .. 196608 (3 segments missing, A .. C)"."""
    names = hole["missing"]
    what = f"segment {names[0]} missing" if len(names) == 1 else \
        f"{len(names)} segments missing, {names[0]} .. {names[-1]}"
    return f"{hole['from']} .. {hole['to']} ({what})"



def _interrupted(w: dict) -> str:
    return (f"`{w['command']}` (pid {w['pid']}) was killed: the next writer (or `rmqtool recover`) rolls it back "
            f"to commitlog offset {w['commitlogEnd']}")


def _behind(ms: int) -> str:
    """How far the newest record's store time is from the checkpoint's, for a glance ("3d 7h")."""
    where = "after" if ms >= 0 else "before"
    exact = f" ({abs(ms)} ms)" if abs(ms) >= 1000 else ""
    return f"newest record is {duration(abs(ms))}{exact} {where} the checkpoint"
