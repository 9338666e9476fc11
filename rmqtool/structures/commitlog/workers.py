"""The scanner's worker threads: how many, and the one pool they run in.

A scan walks a segment's record boundaries on the calling thread (the compiled walk is cheap) and hands
each window's records to a worker that gathers their header columns, checks their body CRCs and groups
their topics; those compiled passes release the GIL, so windows are worked on every core while the walk
goes on. `RMQTOOL_SCAN_THREADS` sets the number of workers (default: one per core; 1: every window on the
calling thread, the scan of one core).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

R = TypeVar("R")

THREADS_VARIABLE = "RMQTOOL_SCAN_THREADS"

_lock = threading.Lock()
_pool: tuple[int, int, ThreadPoolExecutor] | None = None  # (process id, workers, pool)


def scan_threads() -> int:
    """Worker threads a scan uses: `RMQTOOL_SCAN_THREADS` when it is a positive number, else one per core."""
    value = os.environ.get(THREADS_VARIABLE, "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    return max(os.cpu_count() or 1, 1)


def submit(threads: int, fn: Callable[..., R], *args) -> Future[R]:
    """`fn(*args)` on the shared pool of `threads` workers; with one thread, run here and now."""
    if threads <= 1:
        done: Future[R] = Future()
        done.set_result(fn(*args))
        return done
    return _shared_pool(threads).submit(fn, *args)


def _shared_pool(threads: int) -> ThreadPoolExecutor:
    """The process's pool of `threads` workers (made again in a forked child, or for another size)."""
    global _pool
    with _lock:
        if _pool is None or _pool[0] != os.getpid() or _pool[1] != threads:
            if _pool is not None and _pool[0] == os.getpid():
                _pool[2].shutdown(wait=False)
            _pool = (os.getpid(), threads, ThreadPoolExecutor(max_workers=threads, thread_name_prefix="rmqtool-scan"))
        return _pool[2]
