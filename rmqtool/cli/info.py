"""`rmqtool info STORE`: the store at a glance (read-only)."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output
from rmqtool.cli.output import utc


def info(
    store: Path = typer.Argument(..., help="Store root.", show_default=False),
    as_json: bool = typer.Option(False, "--json", help="One JSON document."),
    config: Path | None = typer.Option(None, "--config", help="broker.conf of the store.", show_default=False),
) -> None:
    """Show a store at a glance: its kind, commitlog extent, topics, consume queues, index and checkpoint.

    What kind of store this is (and why), its commitlog extent and store times, every consume
    queue's offset range, each topic's messages, bytes and first and last store time (what its
    consume queues hold), the index files, the checkpoint against the data, and whether an abort
    file is present or a process holds the lock. Reads the first and last segment, the consume
    queues and the index headers only.

    Example: [bold]rmqtool info fixtures/store[/]
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
        "first store time": utc(log.get("firstStoreTimestamp")),
        "last store time": utc(log.get("lastStoreTimestamp")),
        "consume queues": f"{queues['queueCount']} queue(s), {queues['form']}"
                          + (f", files of {queues['fileSize']} bytes" if "fileSize" in queues else ""),
        "messages in queues": doc["messagesInQueues"],
        "index": f"{idx['files']} file(s)" + (f" of {idx['fileSize']} bytes, {idx['entries']} entries, "
                                              f"{utc(idx['firstBeginTimestamp'])} .. {utc(idx['lastEndTimestamp'])}"
                                              if idx["files"] else ""),
        "checkpoint": (f"physic {utc(cp['physicMsgTimestamp'])}, logics {utc(cp['logicsMsgTimestamp'])}, "
                       f"index {utc(cp['indexMsgTimestamp'])}" if cp["present"] else "absent"),
        "abort file": "present: the last writer did not shut down cleanly" if doc["abortFile"] else "absent",
        "lock": f"held by process {doc['lockHeldBy']}" if doc["lockHeldBy"] else "free",
    }
    if "physicBehindDataMs" in cp:
        summary["checkpoint vs data"] = f"newest record is {cp['physicBehindDataMs']} ms after the checkpoint"
    for name, part in doc.get("timerFiles", {}).items():
        summary[name] = ", ".join(f"{k} {v}" for k, v in part.items())
    output.stdout.print(output.key_values("store", summary))
    topics = output.table("topics (as their consumers see them)", ["topic", "queues", "messages", "bytes",
                                                                     "first store time", "last store time"])
    for topic in queues["topics"]:
        topics.add_row(topic["topic"], str(len(topic["queues"])), str(topic["messages"]), str(topic["bytes"]),
                       utc(topic["firstStoreTimestamp"]), utc(topic["lastStoreTimestamp"]))
    output.stdout.print(topics)
    t = output.table("consume queues", ["topic", "queue", "min offset", "max offset", "messages"])
    for topic in queues["topics"]:
        for q in topic["queues"]:
            t.add_row(topic["topic"], str(q["queueId"]), str(q["minOffset"]), str(q["maxOffset"]),
                      str(q["maxOffset"] - q["minOffset"]))
    output.stdout.print(t)
