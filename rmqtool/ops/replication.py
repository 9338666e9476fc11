"""`ha follow` and `ha serve`: a store opened in a replication role, for as long as the caller lets it run.

A follower's store is made when missing and recovered first when its last writer was killed
(as the broker's slave recovers on start). A served store is opened as a master: a writer that
holds the lock, with its slaves' acks; rows given to append go in through the one load path, and
each row's put status comes back as a SYNC_MASTER or ASYNC_MASTER reports it.
"""

from __future__ import annotations

import os
import select
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np

from rmqtool.engine.config import ASYNC_MASTER, SYNC_MASTER, StoreConfig
from rmqtool.engine.ha.acks import SlaveAcks
from rmqtool.engine.ha.master import HaMaster
from rmqtool.engine.ha.slave import Follower
from rmqtool.engine.message_store import MessageStore
from rmqtool.engine.opening import Store, open_store
from rmqtool.errors import RmqError
from rmqtool.io.sources import Source, open_input
from rmqtool.load.writer import load
from rmqtool.ops.recovery import recover_store

ROLES = {"sync": SYNC_MASTER, "async": ASYNC_MASTER}


def parse_address(text: str, what: str) -> tuple[str, int]:
    """HOST:PORT (an IPv6 host in brackets) as a socket address."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RmqError(f"{what} must be HOST:PORT, not {text!r}")
    return host, int(port)


def recovered_first(store: Store, cfg: StoreConfig | None, note: Callable[[str], None]) -> Store:
    """The store as the broker starts on it: recovered first when its last writer stopped without closing it
    (`abort` present), what recovery cut kept in lost/ and said; the one rule of `ha follow` and `ha serve`."""
    if not store.paths.abort.exists():
        return store

    plan, lost = recover_store(store)
    if plan.refused:
        raise RmqError(f"{store.root}: recovery refused: {plan.refused}")
    note(f"recovered {store.root} first (its last writer stopped without closing it)"
         + (f"; what was cut is kept in {lost}" if lost else ""))
    return open_store(store.root, cfg)


@contextmanager
def following(root: str | os.PathLike, cfg: StoreConfig | None, master: str | None, *, ack: str,
              stop: threading.Event, note: Callable[[str], None]) -> Iterator[Follower]:
    """A Follower on the store at `root` (made when missing, recovered first after a crash); the store
    is closed as a slave closes it when the block ends."""
    store = open_store(root, cfg)
    address = master or store.config.haMasterAddress
    if not address:
        raise RmqError("give --master HOST:PORT (or haMasterAddress in --config)")
    host, port = parse_address(address, "--master")
    missing = not store.root.exists()
    made = missing or (store.root.is_dir() and not any(store.root.iterdir()))
    store = recovered_first(store, cfg, note)
    ms = MessageStore(store)
    try:
        yield Follower(ms, host, port, ack=ack, stop=stop)
    except RmqError:
        copied = ms.commitlog.max_offset > 0
        ms.close_replica()
        if made and not copied:  # a follow that failed before its first byte leaves the folder as it found it
            _unmake(store.root, missing)
        raise
    ms.close_replica()


def _unmake(root: Path, missing: bool) -> None:
    """Remove what opening a store made in the folder `root`, which was empty (or `missing`) before."""
    if missing:
        shutil.rmtree(root)
        return
    for path in root.iterdir():
        shutil.rmtree(path) if path.is_dir() else path.unlink()


@contextmanager
def serving(root: str | os.PathLike, cfg: StoreConfig | None, *, port: int | None, bind: str,
            role: str | None, log: Callable[[str], None]) -> Iterator[HaMaster]:
    """The store at `root` served to slaves on `bind`:`port` (default haListenPort) until the block ends;
    recovered first after a crash, as the broker starts."""
    store = recovered_first(open_store(root, cfg), cfg, log)
    config = store.config
    if role is not None:
        if role not in ROLES:
            raise RmqError(f"--role must be sync or async, not {role!r}")
        config = replace(config, brokerRole=ROLES[role])
    elif config.brokerRole not in ROLES.values():
        config = replace(config, brokerRole=ASYNC_MASTER)  # a slave's broker.conf: served as its master would
    store = Store(store.paths, config, store.segments)
    ms = MessageStore(store, acks=SlaveAcks(config.haSlaveFallbehindMax, config.slaveTimeout), create=False)
    try:
        master = HaMaster(ms, bind, port, log)
    except BaseException:
        ms.close()
        raise
    try:
        yield master
    finally:
        master.close()
        ms.close()


def append_rows(master: HaMaster, source_path: str, opts, batch_size: int | None,
                emit: Callable[[dict], None], stop: threading.Event | None = None) -> int:
    """Append the producer rows of `source_path` to the served store, emitting one status object per row; the
    number of rows. `-` is standard input read as a live pipe: each line appended as it arrives, `stop`
    heeded between lines (a file is appended whole)."""

    if source_path == "-":
        return _append_stream(master, sys.stdin.buffer.fileno(), opts, batch_size, emit, stop)
    return _append(master, open_input(source_path), opts, batch_size, emit, 0)


def _append(master: HaMaster, source, opts, batch_size: int | None, emit: Callable[[dict], None], done: int) -> int:
    """One load of `source` into the served store; rows are numbered after the `done` ones before them."""

    store = master.store
    sync = store.sync_master

    def written(base: int, offsets: np.ndarray, lengths: np.ndarray) -> None:
        statuses = master.acks.statuses(sync, offsets + lengths)
        for i, (offset, status) in enumerate(zip(offsets.tolist(), statuses, strict=True)):
            emit({"row": done + base + i + 1, "status": status.value, "commitLogOffset": offset})

    return load(store, source, replace(opts, cfg=store.cfg), batch_size=batch_size, on_written=written).messages


STREAM_POLL_S = 0.2  # how often a reader waiting on a live pipe looks at `stop`


def _append_stream(master: HaMaster, fd: int, opts, batch_size: int | None, emit: Callable[[dict], None],
                   stop: threading.Event | None) -> int:
    """The lines of `fd` appended as they arrive, the lines that came together in one load."""

    rows = lines_read = 0
    pending = b""
    while stop is None or not stop.is_set():
        if not select.select([fd], [], [], STREAM_POLL_S)[0]:
            continue
        chunk = os.read(fd, 1 << 20)
        pending += chunk
        cut = len(pending) if not chunk else pending.rfind(b"\n") + 1
        if cut:
            whole, pending = pending[:cut], pending[cut:]
            if whole.strip():
                rows += _append(master, Source("-", "jsonl", lines=whole, first_line=lines_read + 1), opts,
                                batch_size, emit, rows)
            lines_read += whole.count(b"\n")
        if not chunk:
            break
    return rows



def run_until_stopped(target: Callable[[], None], stop: threading.Event, tick: Callable[[], None],
                      every_s: float) -> None:
    """Run `target` in a thread, calling `tick` every `every_s` (and once at the end) until it returns
    or `stop` is set; the thread's error is raised here."""
    failure: list[BaseException] = []

    def guarded() -> None:
        try:
            target()
        except BaseException as e:  # handed to the caller's thread
            failure.append(e)
        finally:
            stop.set()

    worker = threading.Thread(target=guarded, name="rmqtool-ha", daemon=True)
    worker.start()
    while not stop.wait(every_s):
        tick()
    worker.join()
    tick()
    if failure:
        raise failure[0]
