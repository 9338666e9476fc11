"""`config/delayOffset.json`: how far the schedule service has delivered each delay level
(`ScheduleMessageService`).

`offsetTable` maps a delay level to the next queue offset the service will deliver from the schedule
topic's queue `level - 1`: a delayed message at a lower queue offset has been delivered to its real
topic (level keys written as bare integers, `fastjson`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.structures.config import persist

FILE = "delayOffset.json"
TABLE = "offsetTable"


def delay_offsets_path(root: Path) -> Path:
    return Path(root) / "config" / FILE


def level_of_queue(queue_id: int) -> int:
    """The delay level whose messages the schedule topic's queue `queue_id` holds."""
    return queue_id + 1


@dataclass
class DelayOffsets:
    levels: dict[int, int]  # delay level -> next queue offset to deliver
    loaded: persist.Loaded

    def delivered(self, queue_id: int, queue_offset: int) -> bool:
        """Whether the schedule service has delivered the message at `queue_offset` of its queue `queue_id`."""
        return queue_offset < self.levels.get(level_of_queue(queue_id), 0)


def load(root: Path) -> DelayOffsets:
    """The schedule service's progress as the broker loads it (empty when there is no file)."""
    return of_loaded(persist.load(delay_offsets_path(root)))


def of_loaded(loaded: persist.Loaded) -> DelayOffsets:
    where = loaded.source or loaded.path
    doc = loaded.doc
    table = doc.get(TABLE, {}) if isinstance(doc, dict) else None
    if not isinstance(table, dict):
        raise RmqError(f"{where}: not a delay offset table (no {TABLE} object)")
    levels = {}
    for level, offset in table.items():
        try:
            levels[int(level)] = int(offset)
        except (TypeError, ValueError):
            raise RmqError(f"{where}: level {level!r}: offset {offset!r} is not an integer") from None
    return DelayOffsets(levels, loaded)
