"""Stretches of a write no interrupt may cut: a commit, a close, a clean-up. Inside, SIGINT and SIGTERM are
ignored (on the main thread, the only one Python delivers signals to); the handlers come back after."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

INTERRUPTS = (signal.SIGINT, signal.SIGTERM)
STOPPED_BY: list[int] = []  # the interrupts that stopped this command, in the order they came (the CLI's handler)


@contextmanager
def uninterrupted(sigs: tuple[signal.Signals, ...] = INTERRUPTS) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in sigs}
    for sig in sigs:
        signal.signal(sig, signal.SIG_IGN)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
