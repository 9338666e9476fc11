"""`bench replicate`: serve -> follow on 127.0.0.1.

Catch-up: a master store of one commitlog segment (generated, or STORE read as a master) is served by
this process; `rmqtool ha follow --until-caught-up` into an empty folder runs as a fresh process from
start to level: MB/s over its whole wall time (process start and close included), over its first data
byte to level (as the Java pair was timed), and its peak RSS. Its acks are `flushed` (fdatasync).

SYNC puts: this process is a SYNC_MASTER with one `ha follow` process connected; puts one after the
other, each waiting for the follower's ack, as one producer thread with WAIT=true: puts and messages per
second, p50/p99 latency and the statuses, for broker batches of 1, 32 and 256 messages, with the
follower acknowledging after fdatasync (`flushed`) and after the write (`written`, as the Java slave).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from rmqtool.bench.generate import generate_store
from rmqtool.bench.scale import run_process
from rmqtool.engine.config import SYNC_MASTER, StoreConfig
from rmqtool.engine.ha.acks import SlaveAcks
from rmqtool.engine.ha.master import HaMaster
from rmqtool.engine.message_store import MessageStore
from rmqtool.errors import RmqError
from rmqtool.ops.replication import serving
from rmqtool.structures.commitlog import batch as client_batch
from rmqtool.structures.commitlog.hosts import parse_host
from rmqtool.structures.commitlog.message import Message

BATCHES = (1, 32, 256)
ACKS = ("flushed", "written")
CONNECT_DEADLINE_S = 30


def run_replicate_bench(store: Path | None, *, messages: int, body_size: int, sync_messages: int,
                        config: Path | None = None, progress=None, acks: tuple[str, ...] = ACKS,
                        batches: tuple[int, ...] = BATCHES, catch_up: bool = True) -> dict:
    """Catch-up of an empty follower from STORE (or a generated store of `messages`; None without `catch_up`),
    then SYNC puts for each ack mode and batch size."""
    tmp = Path(tempfile.mkdtemp(prefix="rmqtool-bench-replicate-"))
    try:
        cfg = StoreConfig.from_file(config)[0] if config else StoreConfig()
        if not catch_up:
            result = {"mode": "replicate", "catchUp": None}
        elif store is None:
            if progress:
                progress.print(f"generating {messages:,} messages of {body_size} bytes ...")
            store = generate_store(tmp / "master", messages, body_size, segment_size=cfg.mappedFileSizeCommitLog,
                                   config=cfg).root
            conf = None
        else:
            conf = config
        if catch_up:
            result = {"mode": "replicate", "catchUp": _catch_up(store, conf, tmp, progress)}
        result["sync"] = [_sync_puts(tmp, ack, batch, sync_messages, body_size, progress)
                          for ack in acks for batch in batches]
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _catch_up(store: Path, config: Path | None, tmp: Path, progress) -> dict:
    """An empty follower process from connect to level with `store` served by this process."""
    slave = tmp / "catch-up-slave"
    with serving(store, config, port=0, bind="127.0.0.1", role="async", log=lambda line: None) as master:
        log = master.store.commitlog
        sent = log.max_offset - (log.max_offset - log.max_offset % log.segment_size if log.max_offset else 0)
        if progress:
            progress.print(f"catch-up of {sent:,} bytes ...")
        args = ["ha", "follow", str(slave), "--master", f"127.0.0.1:{master.address[1]}", "--until-caught-up",
                "--jsonl"]
        if config is not None:
            args += ["--config", str(config)]
        run = run_process(args, keep_stdout=True)
    if run["exitCode"]:
        raise RmqError(f"bench replicate: `rmqtool {' '.join(args)}` exited {run['exitCode']}")
    held = sum(p.stat().st_size for p in (slave / "commitlog").iterdir())
    shutil.rmtree(slave, ignore_errors=True)
    seconds = run["seconds"]
    transfer = json.loads(run["stdout"].splitlines()[-1])["transferSeconds"]
    return {"bytes": sent, "seconds": seconds, "mbPerSecond": round(sent / seconds / 1e6, 1) if seconds else None,
            "transferSeconds": transfer, "transferMbPerSecond": round(sent / transfer / 1e6, 1) if transfer else None,
            "followerPeakRssBytes": run["peakRssBytes"], "followerFileBytes": held}


def _sync_puts(tmp: Path, ack: str, batch: int, messages: int, body_size: int, progress) -> dict:
    """`messages` messages in puts of `batch` by this SYNC_MASTER, one follower process acking with `ack`."""
    cfg = dataclasses.replace(StoreConfig(), brokerRole=SYNC_MASTER)
    root = tmp / f"sync-{ack}-{batch}"
    puts = max(1, messages // batch)
    if progress:
        progress.print(f"SYNC puts: {puts:,} puts of {batch} ({ack} acks) ...")
    ms = MessageStore(root / "master", cfg, acks=SlaveAcks(cfg.haSlaveFallbehindMax, cfg.slaveTimeout))
    master = HaMaster(ms, port=0)
    follower = subprocess.Popen([sys.executable, "-m", "rmqtool", "ha", "follow", str(root / "slave"), "--master",
                                 f"127.0.0.1:{master.address[1]}", "--ack", ack],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _await(lambda: master.connections == 1, "the follower to connect")
        put = _putter(ms, batch, body_size)
        put()  # an untimed first put: the follower's first ack
        latencies, statuses = [], Counter()
        start = time.perf_counter()
        for _ in range(puts):
            t0 = time.perf_counter()
            statuses[put()] += 1
            latencies.append(time.perf_counter() - t0)
        seconds = time.perf_counter() - start
    finally:
        follower.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            follower.wait(CONNECT_DEADLINE_S)
        master.close()
        ms.close()
        shutil.rmtree(root, ignore_errors=True)
    latencies.sort()
    return {"ack": ack, "batch": batch, "puts": puts, "messages": puts * batch, "seconds": round(seconds, 3),
            "putsPerSecond": round(puts / seconds), "messagesPerSecond": round(puts * batch / seconds),
            "p50Us": round(latencies[len(latencies) // 2] * 1e6), "p99Us": round(latencies[int(len(latencies) * 0.99)]
                                                                               * 1e6),
            "statuses": dict(statuses)}


def _putter(ms, batch: int, body_size: int):
    """A callable doing one put of `batch` messages; returns its status name."""
    host = parse_host("127.0.0.1:30000")
    body = os.urandom(body_size)
    if batch == 1:
        def one() -> str:
            msg = Message(topic="BenchTopic", body=body, properties_string="", queue_id=0, born_host=host,
                          store_host=host)
            return ms.put_message(msg).status.value
        return one
    items = client_batch.encode([client_batch.BatchItem(body=body, properties_string="", flag=0)] * batch)

    def many() -> str:
        return ms.put_batch("BenchTopic", 0, items, born_host=host, store_host=host).status.value
    return many


def _await(condition, what: str) -> None:
    deadline = time.monotonic() + CONNECT_DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise RmqError(f"bench replicate: timed out waiting for {what}")
        time.sleep(0.01)
