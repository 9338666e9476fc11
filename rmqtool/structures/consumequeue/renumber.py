"""A queue renumbered by a repair: old queue offsets to new ones, and where a committed position goes.

A cut at commitlog offset C keeps the queue's entries before C as they are; the records after C that
survive are appended again, their queue offsets continuing the queue from `base` in log order; the
others are lost. A committed position `c` (the group consumed every message below `c`) moves so that
the group is owed exactly the surviving messages it was owed before: to the new offset of the first
survivor whose old offset is at least `c`, or to the queue's new end when none survives. A position
below every affected offset stays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Renumbering:
    """One queue's offsets across a repair."""

    topic: str
    queue_id: int
    first_affected: int  # the lowest old queue offset at or after the cut (survivor or lost)
    old: np.ndarray  # old queue offsets of the survivors after the cut, ascending
    new: np.ndarray  # their new queue offsets, in the same order
    end: int  # the queue's new max offset (the next offset it assigns)

    def position(self, committed: int) -> int:
        """Where a position committed at `committed` (old numbering) goes."""
        if committed < self.first_affected:
            return min(committed, self.end)
        at = int(np.searchsorted(self.old, committed, side="left"))
        return int(self.new[at]) if at < len(self.old) else self.end

    @property
    def changes(self) -> bool:
        """Whether any offset moves (a queue that only loses its tail renumbers nothing but its end)."""
        return bool(len(self.old)) and bool((self.old != self.new).any())


def renumbering(topic: str, queue_id: int, old_survivors: np.ndarray, new_survivors: np.ndarray,
                lost: np.ndarray, end: int) -> Renumbering:
    """The renumbering of a queue whose survivors after the cut had `old_survivors` and now have
    `new_survivors` (log order), and whose entries at `lost` offsets are gone; `end` is its new max."""
    old = np.asarray(old_survivors, dtype=np.int64)
    new = np.asarray(new_survivors, dtype=np.int64)
    order = np.argsort(old, kind="stable")
    affected = [int(a.min()) for a in (old, np.asarray(lost, dtype=np.int64)) if len(a)]
    return Renumbering(topic, queue_id, min(affected) if affected else end, old[order], new[order], end)
