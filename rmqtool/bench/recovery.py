"""`rmqtool bench recover`: crash recovery of a generated store, then query latency and verify speed on it.

The store (1 GiB segments, broker geometry) is generated, its consume queues deleted, its
checkpoint zeroed and `abort` left behind, so recovery walks every segment with CRC checks
and rebuilds every consume-queue entry and index key. Then msgId and unique-key lookups are
timed one by one inside this process (process start excluded), and `verify` reads it all.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from pathlib import Path

from rmqtool.bench.generate import BENCH_TOPIC, generate_store
from rmqtool.bench.scan import peak_rss_bytes, reset_peak_rss, throughput
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import StoreReader
from rmqtool.files.paths import StorePaths
from rmqtool.ops.query import StoreQuery
from rmqtool.ops.recovery import apply_recovery, plan_recovery
from rmqtool.ops.verify import verify_store
from rmqtool.structures import checkpoint
from rmqtool.structures.commitlog import msgid
from rmqtool.structures.commitlog.hosts import parse_host
from rmqtool.structures.commitlog.message import BLANK_MARKER_LEN

STORE_HOST = parse_host("10.0.0.2:10911")  # the generator's store host


def percentiles(samples: list[float]) -> dict:
    s = sorted(samples)
    return {"p50Ms": round(s[len(s) // 2] * 1000, 4), "p99Ms": round(s[int(len(s) * 0.99)] * 1000, 4),
            "lookups": len(s)}


def run_recovery_bench(*, messages: int, body_size: int, lookups: int = 2000, progress=None) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="rmqtool-bench-recover-"))
    try:
        root = tmp / "store"
        if progress:
            progress.print(f"generating {messages} messages of {body_size} B ...")
        gen = generate_store(root, messages, body_size)
        paths = StorePaths(root)
        shutil.rmtree(paths.consumequeue)
        paths.checkpoint.write_bytes(checkpoint.encode(checkpoint.Checkpoint()))
        paths.abort.touch()
        cfg = StoreConfig()
        reset_peak_rss()
        t0 = time.perf_counter()
        plan = plan_recovery(root, cfg, count_dispatch=False)
        t1 = time.perf_counter()
        apply_recovery(root, cfg, plan)
        t2 = time.perf_counter()
        recover = throughput("recover-crash", messages, gen.bytes, t2 - t0, peak_rss_bytes(),
                             planSeconds=round(t1 - t0, 4))
        reader = StoreReader(root, cfg)
        q = StoreQuery(reader)
        rng = random.Random(1)
        picks = [rng.randrange(messages) for _ in range(lookups)]
        by_id, by_key = [], []
        segment = cfg.mappedFileSizeCommitLog
        per_segment = (segment - BLANK_MARKER_LEN) // gen.record_len
        for i in picks:
            offset = (i // per_segment) * segment + (i % per_segment) * gen.record_len
            mid = msgid.create(STORE_HOST, offset)
            t = time.perf_counter()
            q.by_msg_id(mid)
            by_id.append(time.perf_counter() - t)
            key = gen.unique_key(i)
            t = time.perf_counter()
            hits = q.by_key(BENCH_TOPIC, key, unique=True)
            by_key.append(time.perf_counter() - t)
            found = [h.message.physical_offset for h in hits]
            assert found == [offset], f"message {i} (offset {offset}): unique key {key} found at {found}"
        q.close()
        reset_peak_rss()
        t = time.perf_counter()
        report = verify_store(reader)
        vt = time.perf_counter() - t
        return {
            "recover": recover,
            "queryMsgId": percentiles(by_id),
            "queryUniqueKey": percentiles(by_key),
            "verify": throughput("verify", report.messages, gen.bytes, vt, peak_rss_bytes(), problems=report.problems),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
