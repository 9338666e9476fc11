"""`config/consumerOffset.json`: each group's committed offset per queue (`ConsumerOffsetManager`).

`offsetTable` maps `topic@group` to {queue id: the next queue offset the group will consume}; the
queue ids are written as bare integers (`fastjson`). A committed offset `c` means the group has
consumed every message of that queue below `c`. A key that is not one topic and one group joined by
`@` is kept as read and reported, never guessed at.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.structures.config import persist

FILE = "consumerOffset.json"
TABLE = "offsetTable"
SEPARATOR = "@"  # ConsumerOffsetManager.TOPIC_GROUP_SEPARATOR
RETRY_PREFIX = "%RETRY%"  # MixAll.RETRY_GROUP_TOPIC_PREFIX: a group's retry topic
DLQ_PREFIX = "%DLQ%"  # MixAll.DLQ_GROUP_TOPIC_PREFIX: a group's dead-letter topic


def offsets_path(root: Path) -> Path:
    return Path(root) / "config" / FILE


def table_key(topic: str, group: str) -> str:
    return f"{topic}{SEPARATOR}{group}"


def split_key(key: str) -> tuple[str, str] | None:
    """(topic, group) of an offsetTable key; None when it is not exactly two names joined by `@`."""
    parts = str(key).split(SEPARATOR)
    return (parts[0], parts[1]) if len(parts) == 2 and all(parts) else None


def retry_topic(group: str) -> str:
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_PREFIX + group


@dataclass(frozen=True)
class Committed:
    """One group's committed offsets on one topic."""

    topic: str
    group: str
    queues: dict[int, int]  # queue id -> committed offset


class ConsumerOffsets:
    """The offset table as the broker would load it, and the document it came from (kept whole, so a
    write changes only the entries asked for)."""

    def __init__(self, loaded: persist.Loaded) -> None:
        self.loaded = loaded
        doc = loaded.doc if loaded.doc != {} else {TABLE: {}}
        where = loaded.source or loaded.path
        if not isinstance(doc, dict) or not isinstance(doc.get(TABLE, {}), dict):
            raise RmqError(f"{where}: not a consumer offset table (no {TABLE} object)")
        self.doc: dict = doc
        self.doc.setdefault(TABLE, {})
        self.committed: dict[tuple[str, str], Committed] = {}
        self.bad_keys: list[str] = []  # keys that name no topic@group
        for key, queues in self.doc[TABLE].items():
            names = split_key(key)
            if names is None:
                self.bad_keys.append(str(key))
                continue
            self.committed[names] = Committed(*names, _queue_offsets(where, key, queues))

    @property
    def path(self) -> Path:
        return self.loaded.path

    def groups(self) -> list[str]:
        return sorted({group for _, group in self.committed})

    def of(self, topic: str, group: str) -> Committed | None:
        return self.committed.get((topic, group))

    def on_topic(self, topic: str) -> list[Committed]:
        """Every group's offsets on `topic`, by group name."""
        return sorted((c for (t, _), c in self.committed.items() if t == topic), key=lambda c: c.group)

    def entries(self) -> Iterator[Committed]:
        return iter(sorted(self.committed.values(), key=lambda c: (c.group, c.topic)))

    def replaced(self, topic: str, group: str, queues: Mapping[int, int]) -> dict:
        """The document with `group`'s offsets on `topic` set to `queues` (other queues of the entry kept)."""
        key = table_key(topic, group)
        table = dict(self.doc[TABLE])
        entry = dict(table.get(key) or {})
        for qid, offset in sorted(queues.items()):
            entry.pop(str(qid), None)  # a quoted id written by another tool: one key per queue
            entry[int(qid)] = int(offset)
        table[key] = entry
        return {**self.doc, TABLE: table}


    def of_group(self, group: str) -> list[Committed]:
        """`group`'s offsets on each of its topics, by topic name."""
        return sorted((c for (_, g), c in self.committed.items() if g == group), key=lambda c: c.topic)

    def with_entries(self, entries: Mapping[tuple[str, str], Mapping[int, int] | None]) -> dict:
        """The document with each (topic, group) entry set to its queues, whole (None: the entry removed); every
        other entry kept as read and in its place, a new one at the end."""
        table = dict(self.doc[TABLE])
        for (topic, group), queues in entries.items():
            key = table_key(topic, group)
            if queues is None:
                table.pop(key, None)
            else:
                table[key] = {int(qid): int(offset) for qid, offset in queues.items()}
        return {**self.doc, TABLE: table}

    @property
    def loaded_from_bak(self) -> bool:
        """The file is empty or broken and the table came from its `.bak` (which a write must then keep)."""
        return self.loaded.source is not None and self.loaded.source != self.loaded.path


def _queue_offsets(where: Path, key: object, queues: object) -> dict[int, int]:
    if not isinstance(queues, dict):
        raise RmqError(f"{where}: {key}: not a map of queue id to offset")
    out = {}
    for qid, offset in queues.items():
        try:
            q = int(qid)
        except ValueError:
            raise RmqError(f"{where}: {key}: queue id {qid!r} is not a number") from None
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise RmqError(f"{where}: {key}: queue {q}: offset {offset!r} is not an integer")
        out[q] = offset
    return out


def load(root: Path) -> ConsumerOffsets:
    """The store's consumer offsets as the broker loads them (from the `.bak` when the file is empty or
    does not parse; an empty table when there is neither)."""
    return ConsumerOffsets(persist.load(offsets_path(root)))
