"""The write journal: a write into an existing store (import, append --batch, append) is all or nothing.

Before its first byte the writer records where every structure of the store ends (a `WriteMark`) in
`STORE/.rmqtool-write-journal`, synced. Removing the journal, once all that was written is durable
and the store is closed clean (`abort` gone), is the commit. An interrupt the writer sees (SIGINT,
SIGTERM, a full disk, any error) rolls back at once through the mark it holds. After a SIGKILL the
next writer to open the store, and `recover`, find the journal and roll back first: the commitlog is
cut at the mark (later segments removed, the holding segment zeroed past it), the store is opened as
after a crash, and its queues, index, checkpoint and topic table are undone to the mark.
"""

from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.files.lock import fsync_path
from rmqtool.files.paths import StorePaths, parse_offset_name
from rmqtool.files.segments import nonzero_end, zero_range
from rmqtool.files.signals import uninterrupted

JOURNAL_NAME = ".rmqtool-write-journal"
DELETIONS_NAME = ".rmqtool-clean-journal"  # files `clean` removes: finished, never undone


@dataclass
class WriteMark:
    """Where every structure of an open store ends: what a rollback cuts back to."""

    commitlog_end: int
    last_store_timestamp: int
    table: dict[tuple[str, int], int]
    queue_ends: dict[tuple[str, int], tuple[int, int]]  # bytes written, max physical end
    logics_timestamp: int
    written: dict[str, int]
    index_files: int = 0
    index_header: bytes = b""
    index_last_full: int = 0
    checkpoint: tuple[int, int, int] | None = None  # physic, logics, index times (None: a journal without them)
    topics_taken: bool = False  # the topic table's files were kept below: the write registers its topics
    topics: dict[str, bytes | None] | None = None  # config/topics.json and its .bak/.tmp (None: no config/)


def journal_path(paths: StorePaths) -> Path:
    return paths.root / JOURNAL_NAME


def write(paths: StorePaths, mark: WriteMark, command: str) -> None:
    """Record `mark` durably before the first byte of `command` is written."""
    doc = {"command": command, "pid": os.getpid(), "startedMs": time.time_ns() // 1_000_000,
           "mark": _mark_json(mark)}
    _write_durably(journal_path(paths), doc)


def clear(paths: StorePaths) -> None:
    """The commit (or the end of a roll back): the journal is gone, durably."""
    path = journal_path(paths)
    if path.exists():
        path.unlink()
        fsync_path(paths.root)


def pending(paths: StorePaths) -> dict | None:
    """The journal a killed writer left ({"command", "pid", "startedMs", "mark"}), or None."""
    path = journal_path(paths)
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
        doc["mark"]["commitlogEnd"]
    except (OSError, ValueError, KeyError, TypeError):
        raise RmqError(f"{path}: an unreadable write journal; move it away only if no write was interrupted") \
            from None
    return doc


def mark_of(doc: dict) -> WriteMark:
    """The WriteMark a journal holds."""
    m = doc["mark"]
    return WriteMark(m["commitlogEnd"], m["lastStoreTimestamp"], {_key(k): v for k, v in m["table"].items()},
                     {_key(k): tuple(v) for k, v in m["queueEnds"].items()}, m["logicsTimestamp"], m["written"],
                     m["indexFiles"], base64.b64decode(m["indexHeader"]), m["indexLastFull"],
                     tuple(m["checkpoint"]) if "checkpoint" in m else None, "topics" in m, _files_of(m.get("topics")))


def cut_commitlog(paths: StorePaths, end: int, segment_size: int) -> None:
    """The commitlog back to `end` at the file level: later segments removed, the rest of the holding one
    zeroed (the store cannot be opened before: the interrupted write may have left a torn record)."""
    folder = paths.commitlog
    if not folder.is_dir():
        return
    for f in sorted(folder.iterdir(), reverse=True):
        start = parse_offset_name(f.name)
        if start is None:
            continue
        if start >= end:  # as an in-process roll back truncates the segment queue
            f.unlink()
        elif start < end < start + segment_size:
            data = nonzero_end(f, end - start)
            if data > end - start:
                zero_range(f, end - start, data)
    fsync_path(folder)


def describe(doc: dict) -> str:
    """One line: what was interrupted and where the commitlog goes back to."""
    return (f"an interrupted `{doc['command']}` (pid {doc['pid']}) is rolled back: the commitlog goes back to "
            f"offset {doc['mark']['commitlogEnd']}, queues and index to where they were")


def delete_all(paths: StorePaths, files: list[str]) -> None:
    """Remove `files` (expired files `clean` chose) as one step: the list is recorded durably first, so an
    interrupt anywhere ends with all of them gone (here, or by the next writer or `recover`)."""
    _write_durably(paths.root / DELETIONS_NAME, files)
    finish_deletions(paths)


def finish_deletions(paths: StorePaths) -> int:
    """Finish the removals a `clean` recorded (a second Ctrl-C is held off until done); how many it had."""
    path = paths.root / DELETIONS_NAME
    if not path.is_file():
        return 0
    with uninterrupted():
        files = json.loads(path.read_text())
        for f in files:
            Path(f).unlink(missing_ok=True)
        path.unlink()
        fsync_path(paths.root)
    return len(files)


def _mark_json(mark: WriteMark) -> dict:
    m = asdict(mark)
    return {"commitlogEnd": m["commitlog_end"], "lastStoreTimestamp": m["last_store_timestamp"],
            "table": {_name(k): v for k, v in m["table"].items()},
            "queueEnds": {_name(k): list(v) for k, v in m["queue_ends"].items()},
            "logicsTimestamp": m["logics_timestamp"], "written": m["written"], "indexFiles": m["index_files"],
            "indexHeader": base64.b64encode(m["index_header"]).decode(), "indexLastFull": m["index_last_full"],
            **({"checkpoint": list(mark.checkpoint)} if mark.checkpoint is not None else {}),
            **({"topics": _files_json(mark.topics)} if mark.topics_taken else {})}


def _files_json(files: dict[str, bytes | None] | None) -> dict | None:
    if files is None:
        return None
    return {k: None if v is None else base64.b64encode(v).decode() for k, v in files.items()}


def _files_of(doc: dict | None) -> dict[str, bytes | None] | None:
    if doc is None:
        return None
    return {k: None if v is None else base64.b64decode(v) for k, v in doc.items()}


def _name(key: tuple[str, int]) -> str:
    return f"{key[1]}@{key[0]}"  # the queue id first: a topic may hold '@'


def _key(name: str) -> tuple[str, int]:
    qid, _, topic = name.partition("@")
    return topic, int(qid)


def _write_durably(path: Path, doc) -> None:
    """`doc` as JSON at `path`, whole or not at all, synced with its folder's entry."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w") as f:
            json.dump(doc, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:  # an interrupt or a full disk: no half-made journal stays
        tmp.unlink(missing_ok=True)
        raise
    fsync_path(path.parent)

