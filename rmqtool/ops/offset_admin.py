"""Consumer offsets changed while the broker is down: a group reset on a topic (to a time, an offset, each
queue's min or max; on every queue or one), a group's offsets cloned to another (mqadmin
`cloneGroupOffset`), a group's offsets deleted.

Each action plans on the table as the broker loads it and, unless it is a dry run, writes the table back
through the one writer (`persist.save`: `.tmp`, the old text to `.bak`, the rename) while holding the
store's lock, from before the table is read until it is replaced. A running broker holds that lock, and it
would write its own table over ours when it stops, so its store is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from rmqtool.engine.reader import StoreReader
from rmqtool.errors import NotFound, RmqError
from rmqtool.ops.query import StoreQuery
from rmqtool.structures.config import offsets, persist

Plan = TypeVar("Plan")


def _table(reader: StoreReader) -> offsets.ConsumerOffsets:
    return offsets.load(reader.paths.root)


def _change(reader: StoreReader, dry_run: bool, what: str,
            plan: Callable[[offsets.ConsumerOffsets], tuple[Plan, dict]]) -> Plan:
    """`plan` run on the table; unless `dry_run`, the document it returns written in the table's place under
    the store's lock (`what` names the change in a refusal)."""
    if dry_run:
        return plan(_table(reader))[0]
    reader.store.require_writable(what)
    lock = reader.store.files.lock()
    try:
        table = _table(reader)
        done, doc = plan(table)
        persist.save(table.path, doc, keep_bak=table.loaded_from_bak)
        return done
    finally:
        lock.release()


# ---- reset ---------------------------------------------------------------------------------------
@dataclass
class ResetPlan:
    group: str
    topic: str
    target: dict  # what was asked for: {"time": ms} | {"offset": n} | {"earliest": True} | {"latest": True}
    rows: list[dict]  # queueId, oldOffset (None: none committed), newOffset, minOffset, maxOffset
    kept: list[int]  # queue ids the table has and the store does not: left as they are
    file: str = ""  # the offset table written (or that would be)
    queue: int | None = None  # the one queue reset (None: every queue of the topic)

    def to_json(self) -> dict:
        return {"group": self.group, "topic": self.topic, "target": self.target, "queue": self.queue,
                "file": self.file, "queues": self.rows, "keptQueues": self.kept}

    @property
    def changes(self) -> int:
        return sum(r["oldOffset"] != r["newOffset"] for r in self.rows)


def plan_reset(reader: StoreReader, group: str, topic: str, *, queue: int | None = None,
               to_time: int | None = None, to_offset: int | None = None, earliest: bool = False,
               latest: bool = False, table: offsets.ConsumerOffsets | None = None) -> ResetPlan:
    """The offsets `group` would have on each of `topic`'s queues (or on `queue` alone): the queue offset of
    the first message stored at or after `to_time` (the lookup `query --time` makes), `to_offset`, the
    queue's min or max."""
    asked = [to_time is not None, to_offset is not None, earliest, latest]
    if sum(asked) != 1:
        raise RmqError("give exactly one of --to-time, --to-offset, --to-earliest, --to-latest")
    queue_ids = reader.queues.queue_ids(topic)
    if not queue_ids:
        raise RmqError(f"topic {topic} has no consume queues in {reader.paths.root}: nothing to reset")
    if queue is not None:
        if queue not in queue_ids:
            raise RmqError(f"--queue {queue}: topic {topic} has queues {', '.join(map(str, queue_ids))}; "
                           "nothing was changed")
        queue_ids = [queue]
    current = (table or _table(reader)).of(topic, group)
    old = current.queues if current is not None else {}
    query = StoreQuery(reader)
    try:
        rows = []
        for qid in queue_ids:
            low, high = reader.queues.bounds(topic, qid)
            new = _target(query, topic, qid, low, high, to_time, to_offset, earliest)
            rows.append({"queueId": qid, "oldOffset": old.get(qid), "newOffset": new, "minOffset": low,
                         "maxOffset": high})
    finally:
        query.close()
    target = ({"time": to_time} if to_time is not None else {"offset": to_offset} if to_offset is not None else
              {"earliest": True} if earliest else {"latest": True})
    kept = [] if queue is not None else sorted(set(old) - set(queue_ids))
    return ResetPlan(group, topic, target, rows, kept, str(offsets.offsets_path(reader.paths.root)), queue)


def _target(query: StoreQuery, topic: str, qid: int, low: int, high: int, to_time: int | None,
            to_offset: int | None, earliest: bool) -> int:
    if to_time is not None:
        return query.offset_by_time(topic, qid, to_time)["queueOffset"]
    if to_offset is not None:
        if not low <= to_offset <= high:
            raise RmqError(f"--to-offset {to_offset} is outside queue {topic}/{qid} ({low}..{high}): nothing was "
                           "changed")
        return to_offset
    return low if earliest else high


def reset_offsets(reader: StoreReader, group: str, topic: str, *, dry_run: bool = False, **target) -> ResetPlan:
    """Plan `group`'s reset on `topic` (`plan_reset`) and, unless `dry_run`, write it into consumerOffset.json
    (the queues the plan does not name are kept)."""
    def plan(table: offsets.ConsumerOffsets) -> tuple[ResetPlan, dict]:
        done = plan_reset(reader, group, topic, table=table, **target)
        return done, table.replaced(topic, group, {r["queueId"]: r["newOffset"] for r in done.rows})

    return _change(reader, dry_run, "reset consumer offsets in", plan)


# ---- clone and delete: whole entries -------------------------------------------------------------
@dataclass
class EntriesPlan:
    """Whole entries of the table replaced: each (topic, group) entry's new queues (None: removed)."""

    action: str  # "clone" | "delete"
    asked: dict  # clone: {"from", "to", "topic"}; delete: {"group", "topic"} (topic None: every topic)
    entries: dict[tuple[str, str], dict[int, int] | None]
    rows: list[dict]  # group, topic, queueId, oldOffset (None: none committed), newOffset (None: removed)
    file: str

    def to_json(self) -> dict:
        return {"action": self.action, **self.asked, "file": self.file, "queues": self.rows}

    @property
    def changes(self) -> int:
        return sum(r["oldOffset"] != r["newOffset"] for r in self.rows)


def _entries_plan(table: offsets.ConsumerOffsets, action: str, asked: dict,
                  entries: dict[tuple[str, str], dict[int, int] | None]) -> tuple[EntriesPlan, dict]:
    rows = []
    for (topic, group), queues in entries.items():
        current = table.of(topic, group)
        old, new = (current.queues if current is not None else {}), (queues or {})
        rows += [{"group": group, "topic": topic, "queueId": qid, "oldOffset": old.get(qid),
                  "newOffset": new.get(qid)} for qid in sorted(set(old) | set(new))]
    return EntriesPlan(action, asked, entries, rows, str(table.path)), table.with_entries(entries)


def _committed(table: offsets.ConsumerOffsets, group: str, topic: str | None) -> list[offsets.Committed]:
    """`group`'s entries (only `topic`'s, when given); NotFound naming what the table has instead."""
    mine = table.of_group(group)
    found = [c for c in mine if topic is None or c.topic == topic]
    if found:
        return found
    if mine:
        raise NotFound(f"group {group} has no committed offsets on topic {topic} in {table.path} (its topics: "
                       f"{', '.join(c.topic for c in mine[:20])})")
    known = ", ".join(table.groups()[:20]) or "none"
    raise NotFound(f"group {group} has no committed offsets in {table.path} (groups: {known})")


def clone_offsets(reader: StoreReader, source: str, dest: str, topic: str | None = None, *,
                  dry_run: bool = False) -> EntriesPlan:
    """`source`'s committed offsets on each of its topics (or `topic` alone) copied to `dest`, as mqadmin
    `cloneGroupOffset` does: `dest`'s entry for each such topic becomes a copy of `source`'s, whole; its other
    topics and every other group are kept."""
    if source == dest:
        raise RmqError(f"--clone {source} --to {dest}: a group cannot be cloned onto itself")

    def plan(table: offsets.ConsumerOffsets) -> tuple[EntriesPlan, dict]:
        entries = {(c.topic, dest): dict(c.queues) for c in _committed(table, source, topic)}
        return _entries_plan(table, "clone", {"from": source, "to": dest, "topic": topic}, entries)

    return _change(reader, dry_run, "clone consumer offsets in", plan)


def delete_offsets(reader: StoreReader, group: str, topic: str | None = None, *,
                   dry_run: bool = False) -> EntriesPlan:
    """`group`'s committed offsets on `topic` (or on every topic) removed from the table; everything else
    kept."""
    def plan(table: offsets.ConsumerOffsets) -> tuple[EntriesPlan, dict]:
        entries: dict[tuple[str, str], dict[int, int] | None] = {
            (c.topic, group): None for c in _committed(table, group, topic)}
        return _entries_plan(table, "delete", {"group": group, "topic": topic}, entries)

    return _change(reader, dry_run, "delete consumer offsets in", plan)
