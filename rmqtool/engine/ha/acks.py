"""What a master knows of its slaves, and what a SYNC_MASTER's put waits for.

The master keeps the highest offset any slave acknowledged (the broker's push2SlaveMaxOffset;
never lowered, even when that slave leaves) and how many slaves are connected. A SYNC put is
SLAVE_NOT_AVAILABLE at once when no slave is connected or the put's end is `haSlaveFallbehindMax`
or more past the highest ack; otherwise it waits up to `slaveTimeout` for an ack at or past its
end: PUT_OK, or FLUSH_SLAVE_TIMEOUT. Either failure still means stored on the master. A waiting put
reads the acks itself when it can (`reader`); puts that cannot wait on a condition that every ack, and
every put that stops reading, wakes: one ack releases all the puts it covers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rmqtool.engine.results import PutStatus

if TYPE_CHECKING:
    import numpy as np


class SlaveAcks:
    def __init__(self, fallbehind: int, timeout_ms: int) -> None:
        self.fallbehind = fallbehind
        self.timeout_s = timeout_ms / 1000
        self.highest = 0
        self.connections = 0
        self._acked = threading.Condition()
        self._written = threading.Condition()  # senders wait here for new bytes
        self.generation = 0  # bumped by every append, so a sender sees it missed none
        self.pusher: Callable[[], bool] | None = None  # sends new bytes from a SYNC put's own thread
        # reads acks from a SYNC put's own thread until (end, deadline); False when another thread reads them
        self.reader: Callable[[int, float], bool] | None = None
        self._releases = 0  # bumped when a put stops reading acks, so a waiting put may read them next

    def connected(self) -> None:
        with self._acked:
            self.connections += 1

    def disconnected(self) -> None:
        with self._acked:
            self.connections -= 1

    def acked(self, offset: int) -> None:
        with self._acked:
            if offset > self.highest:
                self.highest = offset
                self._acked.notify_all()

    def slave_ok(self, end: int) -> bool:
        return self.connections > 0 and end - self.highest < self.fallbehind

    def wait(self, end: int) -> PutStatus:
        """The status of a SYNC put whose records end at `end` (sent from this thread when a sender is idle)."""
        if not self.slave_ok(end):
            return PutStatus.SLAVE_NOT_AVAILABLE
        pusher = self.pusher
        if self.highest < end and (pusher is None or not pusher()):
            self.written()  # a sender was busy: it sends the rest
        deadline = time.monotonic() + self.timeout_s
        while self.highest < end:
            left = deadline - time.monotonic()
            if left <= 0:
                return PutStatus.FLUSH_SLAVE_TIMEOUT
            releases, reader = self._releases, self.reader
            if reader is not None and reader(end, deadline):
                continue
            with self._acked:
                if self.highest < end and self._releases == releases:
                    self._acked.wait(left)
        return PutStatus.PUT_OK

    def released(self) -> None:
        """A put stopped reading acks: wake the puts still waiting, one of them reads next."""
        with self._acked:
            self._releases += 1
            self._acked.notify_all()

    def statuses(self, sync: bool, ends: np.ndarray) -> list[PutStatus]:
        """Each record's put status, its records written and ending at `ends`: a SYNC_MASTER waits once for
        the furthest; a record an ack covers is PUT_OK, the others take that wait's failure."""
        if not sync or len(ends) == 0:
            return [PutStatus.PUT_OK] * len(ends)
        status = self.wait(int(ends.max()))
        highest = self.highest
        return [PutStatus.PUT_OK if int(e) <= highest else status for e in ends.tolist()]

    def written(self, notify: bool = True) -> None:
        """New bytes are in the commitlog: wake the senders (a SYNC put that sends them itself does not)."""
        with self._written:
            self.generation += 1
            if notify:
                self._written.notify_all()

    def wait_written(self, seen: int, timeout_s: float) -> int:
        """Wait until an append after generation `seen` (or the timeout); the generation now."""
        with self._written:
            if self.generation == seen:
                self._written.wait(timeout_s)
            return self.generation
