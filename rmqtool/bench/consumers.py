"""`bench consumers`: `rmqtool consumers STORE --json` with many groups, in fresh processes.

The offset table is written into an overlay, never into STORE: a temp folder whose entries are
symlinks to STORE's (commitlog/, consumequeue/, index/, checkpoint ...) except config/, which is its
own, holding the generated config/consumerOffset.json (STORE's other config files linked). Group i
commits on every queue of topic i mod (the store's topics), each offset between the queue's min and
max, so a group lists as many rows as its topic has queues. A generated store has one topic with
`queues` queues: `groups` x `queues` rows.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from rmqtool.bench.process import run_rmqtool
from rmqtool.bench.readpath import _data_bytes, bench_store
from rmqtool.bench.scale import run_process
from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.structures.commitlog.delay import SCHEDULE_TOPIC
from rmqtool.structures.config import offsets, persist

CONFIG = "config"
GROUP_PREFIX = "bench-group-"


def consumer_topics(reader: StoreReader) -> list[str]:
    """The store's topics with queues that a consumer group subscribes to (not the schedule, retry or
    dead-letter topics)."""
    return [t for t in sorted(reader.topics()) if t != SCHEDULE_TOPIC and reader.queue_ids(t)
            and not t.startswith((offsets.RETRY_PREFIX, offsets.DLQ_PREFIX))]


def offset_doc(reader: StoreReader, groups: int) -> dict:
    """The consumerOffset.json document: group i on every queue of topic i mod len(topics), at a point
    between the queue's min and max that differs by group and queue (most rows have a lag)."""
    topics = consumer_topics(reader)
    if not topics:
        raise RmqError(f"{reader.paths.root}: no consume queues: no topic for consumer groups")
    bounds = {t: {q: reader.queues.bounds(t, q) for q in reader.queue_ids(t)} for t in topics}
    table: dict[str, dict[int, int]] = {}
    for i in range(groups):
        topic = topics[i % len(topics)]
        table[offsets.table_key(topic, f"{GROUP_PREFIX}{i}")] = {
            qid: low + (high - low) * ((i + qid) % 10) // 10 for qid, (low, high) in bounds[topic].items()}
    return {offsets.TABLE: table}


def overlay(store: Path, into: Path, doc: dict) -> Path:
    """A store at `into` that reads `store` through symlinks, with its own config/ holding `doc` as the
    offset table (store's other config files linked). Nothing is written under `store`."""
    store = store.resolve()
    into.mkdir()
    for entry in store.iterdir():
        if entry.name != CONFIG:
            (into / entry.name).symlink_to(entry)
    config = into / CONFIG
    config.mkdir()
    if (store / CONFIG).is_dir():
        for entry in (store / CONFIG).iterdir():
            if not entry.name.startswith(offsets.FILE):
                (config / entry.name).symlink_to(entry)
    persist.save(offsets.offsets_path(into), doc)
    return into


def run_consumers_bench(store: Path | None, *, groups: int, queues: int, messages: int, body_size: int,
                        repeat: int = 2, config: Path | None = None, progress=None) -> dict:
    """Best of `repeat` fresh `consumers --json` processes, and of the table (after an untimed one of each),
    on `groups` groups over STORE (or a generated store of `messages` in `queues` queues): wall and CPU
    seconds, rows, peak RSS."""
    tmp = Path(tempfile.mkdtemp(prefix="rmqtool-bench-consumers-"))
    try:
        with bench_store(store, config, messages, body_size, progress, queues=queues) as reader:
            if progress:
                progress.print(f"writing offsets of {groups} groups into an overlay of {reader.paths.root} ...")
            root = overlay(reader.paths.root, tmp / "overlay", offset_doc(reader, groups))
            store_bytes = _data_bytes(reader)
            args = ["consumers", str(root), "--json", *(["--config", str(config)] if config else [])]
            first = run_process(args, keep_stdout=True)  # untimed: imports, compiled kernels, page cache
            if first["exitCode"] != 0:
                raise RmqError(f"bench consumers: `rmqtool {' '.join(args)}` exited {first['exitCode']}")
            listed = json.loads(first["stdout"])["groups"]
            table = [a for a in args if a != "--json"]
            run_process(table)  # untimed, as the first
            best: dict[str, tuple[float, float]] = {}
            for _ in range(repeat):
                for mode, how in (("json", args), ("table", table)):
                    wall, cpu = run_rmqtool(how)
                    if mode not in best or cpu < best[mode][1]:
                        best[mode] = (wall, cpu)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows, n = sum(len(g["queues"]) for g in listed), len(listed)
    per_group = (rows // n if rows % n == 0 else round(rows / n, 2)) if n else 0  # an average when topics differ
    return {"mode": "consumers", "groups": n, "queues": per_group,
            "rows": rows, "storeBytes": store_bytes, "seconds": round(best["json"][0], 3),
            "cpuSeconds": round(best["json"][1], 3), "tableSeconds": round(best["table"][0], 3),
            "tableCpuSeconds": round(best["table"][1], 3), "peakRssBytes": first["peakRssBytes"]}
