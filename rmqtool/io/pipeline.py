"""An ordered parallel map for the read path: scanner batches become rows (and rows become
output bytes) on every core while the scan goes on, and come out in log order.

The compiled kernels and pyarrow release the GIL, so threads are enough. At most `window`
items are in flight, which bounds memory by a few scanner windows whatever the store's
size. Items `passes(item)` says to pass (findings) travel in order without being mapped.
`ahead` reads a source one thread ahead of the loader that writes it.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

WORKERS = max(os.cpu_count() or 1, 1)
IN_FLIGHT_PER_WORKER = 3  # items queued per worker: enough that a slow item does not idle the others


def ordered_map(fn: Callable[[T], R], items: Iterable[T], *, passes: Callable[[object], bool] = lambda _: False,
                workers: int = WORKERS, window: int | None = None) -> Iterator[R | T]:
    """`fn(item)` for every item (passed items as they are), in input order, computed `workers` at a time."""
    if workers <= 1:
        for item in items:
            yield item if passes(item) else fn(item)
        return
    window = window or IN_FLIGHT_PER_WORKER * workers
    pending: deque[Future | T] = deque()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rmqtool-read") as pool:
        try:
            for item in items:
                pending.append(item if passes(item) else pool.submit(fn, item))
                while len(pending) > window or (pending and not isinstance(pending[0], Future)):
                    yield _result(pending.popleft())
            while pending:
                yield _result(pending.popleft())
        finally:
            for f in pending:
                if isinstance(f, Future):
                    f.cancel()


def _result(item):
    return item.result() if isinstance(item, Future) else item


def ahead(items: Iterable[T], depth: int = 2) -> Iterator[T]:
    """The items in order, produced by one background thread up to `depth` ahead of the consumer
    (an exception in the producer is raised where its item would have come)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rmqtool-ahead") as pool:
        it = iter(items)
        done = object()
        pending: deque[Future] = deque()
        while True:
            while len(pending) < depth:
                pending.append(pool.submit(next, it, done))
            item = pending.popleft().result()
            if item is done:
                for f in pending:
                    f.cancel()
                return
            yield item
