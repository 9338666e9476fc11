"""Committed positions moved with the queues a repair renumbers: `consumerOffset.json` (each group's offset
per queue) and `delayOffset.json` (the schedule service's offset per delay level), each with its `.bak`.

A position on a renumbered queue goes where the queue's `Renumbering` sends it; everything else of each
document is kept as read, and a document nothing moves in is not written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.structures.commitlog.delay import SCHEDULE_TOPIC
from rmqtool.structures.config import fastjson, persist
from rmqtool.structures.config.delayoffsets import FILE as DELAY_FILE
from rmqtool.structures.config.delayoffsets import level_of_queue
from rmqtool.structures.config.offsets import FILE as OFFSETS_FILE
from rmqtool.structures.config.offsets import TABLE, split_key
from rmqtool.structures.consumequeue.renumber import Renumbering

FILES = (OFFSETS_FILE, OFFSETS_FILE + persist.BAK, DELAY_FILE, DELAY_FILE + persist.BAK)
DELAY_GROUP = "(delay level {level})"  # how the schedule service's position is named among the groups


@dataclass(frozen=True)
class Moved:
    """One committed position a repair moves."""

    file: str  # the config file's name
    group: str
    topic: str
    queue_id: int
    before: int
    after: int

    def to_json(self) -> dict:
        return {"file": self.file, "group": self.group, "topic": self.topic, "queueId": self.queue_id,
                "from": self.before, "to": self.after}


def move_positions(config_dir: Path, queues: Mapping[tuple[str, int], Renumbering], *,
                   write: bool = True) -> list[Moved]:
    """Move every position in `config_dir`'s offset files through `queues`, writing each file that changes
    in place (the caller's staged copy; a plan passes `write=False`); returns what moved."""
    moved: list[Moved] = []
    for name in FILES:
        path = config_dir / name
        text = persist.read_text(path)
        if not text:
            continue
        try:
            doc = persist.parse(path, text)
        except RmqError:
            continue  # a file the broker passes over for its .bak: kept as it is
        table = doc.get(TABLE) if isinstance(doc, dict) else None
        if not isinstance(table, dict):
            continue
        mover = _delay_entry if name.startswith(DELAY_FILE) else _group_entry
        here: list[Moved] = []
        for key in list(table):
            table[key] = mover(name, key, table[key], queues, here.append)
        if here and write:
            path.write_text(fastjson.dumps(doc), encoding="utf-8")
        moved += here
    return moved


Note = Callable[[Moved], None]


def _group_entry(name: str, key: object, entry: object, queues: Mapping[tuple[str, int], Renumbering],
                 note: Note) -> object:
    names = split_key(str(key))
    if names is None or not isinstance(entry, dict):
        return entry  # kept as read: not a topic@group entry
    topic, group = names
    out = {}
    for qid, offset in entry.items():
        out[qid] = _moved(name, group, topic, qid, offset, queues, note)
    return out


def _delay_entry(name: str, level: object, offset: object, queues: Mapping[tuple[str, int], Renumbering],
                 note: Note) -> object:
    try:
        queue_id = int(level) - 1
    except (TypeError, ValueError):
        return offset
    return _moved(name, DELAY_GROUP.format(level=level_of_queue(queue_id)), SCHEDULE_TOPIC, queue_id, offset,
                  queues, note)


def _moved(name: str, group: str, topic: str, qid: object, offset: object,
           queues: Mapping[tuple[str, int], Renumbering], note: Note) -> object:
    try:
        queue = queues.get((topic, int(qid)))
    except (TypeError, ValueError):
        return offset
    if queue is None or isinstance(offset, bool) or not isinstance(offset, int):
        return offset
    after = queue.position(offset)
    if after != offset:
        note(Moved(name, group, topic, int(qid), offset, after))
    return after
