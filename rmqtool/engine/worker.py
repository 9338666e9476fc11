"""A background thread that does one step whenever it is woken (and, given an interval, at
least that often): the store's dispatcher, page warmer and async flusher. An error stops
the thread and is raised to the next caller of `check` or `stop`."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Worker:
    def __init__(self, name: str, step: Callable[[], None], interval_s: float | None = None) -> None:
        self.step = step
        self.interval = interval_s
        self.error: BaseException | None = None
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            if self._stopping:
                return
            try:
                self.step()
            except BaseException as e:  # handed to the thread that appends
                self.error = e
                return

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def stop_quietly(self) -> None:
        """Stop without raising the thread's error (the caller is handling one already)."""
        self._stopping = True
        self._wake.set()
        self._thread.join()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join()
        self.check()
