"""`rmqtool bench spark-load`: rows/s of spark-load at local[1] and local[2] against `import`.

Producer rows (100-byte bodies by default) are generated as one Parquet file before any
clock starts. Each run is a fresh process loading them into a fresh store: `import` (one
process), then spark-load on local[1] and local[2]. A Spark run starts its session and loads
a few rows first in small row groups (JVM, a Python worker per core, compiled kernels), then the clock covers the whole
load: read, plan, write, index, checksums and adoption.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from rmqtool.bench.scan import throughput
from rmqtool.errors import RmqError

STAMP = 1_700_000_000_000
_ROW_GROUP = 1 << 16  # rows per Parquet row group: Spark splits a file between row groups
_WARM_ROW_GROUP = 250  # the warm-up load's 2000 rows make 8 tasks: every core's Python worker starts
_TOPICS = ("BenchOrders", "BenchPayments", "BenchAudit", "BenchEvents")

_CHILD = """
import json, sys, time
from pathlib import Path
from rmqtool.bench.scan import peak_rss_bytes
from rmqtool.engine.config import StoreConfig
from rmqtool.load.records import LoadOptions
mode, source, warm, target = sys.argv[1:5]
opts = LoadOptions(StoreConfig(), STAMP)
if mode == "import":
    from rmqtool.io.sources import Source
    from rmqtool.load.writer import load
    t0 = time.perf_counter()
    summary = load(target, Source(source), opts)
    seconds, setup = time.perf_counter() - t0, 0.0
    messages, nbytes = summary.messages, summary.bytes
else:
    from rmqtool.spark.load import spark_load
    from rmqtool.spark.session import get_session
    t0 = time.perf_counter()
    get_session(mode)
    spark_load([Path(warm)], Path(target + "-warm"), opts, fmt="parquet", master=mode)
    setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = spark_load([Path(source)], Path(target), opts, fmt="parquet", master=mode)
    seconds = time.perf_counter() - t0
    messages, nbytes = result.messages, result.end_offset - result.first_offset
print(json.dumps({"messages": messages, "bytes": nbytes, "seconds": seconds, "setup": setup,
                  "peak": peak_rss_bytes()}))
""".replace("STAMP", str(STAMP))


def generate_rows(path: Path, messages: int, body_size: int, seed: int = 7, row_group: int = _ROW_GROUP) -> None:
    """Producer rows as Parquet: topic, binary body, tags, keys (written in slices to bound memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    step = 1 << 20
    with pq.ParquetWriter(path, pa.schema([("topic", pa.string()), ("body", pa.binary()), ("tags", pa.string()),
                                           ("keys", pa.string())])) as writer:
        for a in range(0, messages, step):
            n = min(step, messages - a)
            raw = rng.integers(0, 256, n * body_size, dtype=np.uint8)
            offsets = np.arange(0, (n + 1) * body_size, body_size, dtype=np.int32)
            body = pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw)])
            ids = np.arange(a, a + n)
            topic = pa.DictionaryArray.from_arrays(pa.array(ids % len(_TOPICS)), pa.array(_TOPICS)).cast(pa.string())
            tags = pa.array(np.char.add("tag", (ids % 8).astype(str)))
            keys = pa.array(np.char.add("order-", ids.astype(str)))
            writer.write_table(pa.table({"topic": topic, "body": body, "tags": tags, "keys": keys}),
                               row_group_size=row_group)


def speed_ratios(timed: dict[str, tuple[int, float]], masters: list[str]) -> dict[str, float | None]:
    """How many times the speed of import each master's load had (and local[2] that of local[1]), from each run's
    (messages, seconds) as measured: a rate rounded to whole messages per second is 0 for a slow run. None where
    the run it is compared with did nothing measurable."""

    def ratio(mode: str, base: str) -> float | None:
        (m, s), (bm, bs) = timed[mode], timed[base]
        return round((m / s) / (bm / bs), 2) if m and s > 0 and bm and bs > 0 else None

    ratios = {}
    if "spark-load-local[1]" in timed and "spark-load-local[2]" in timed:
        ratios["local2OverLocal1"] = ratio("spark-load-local[2]", "spark-load-local[1]")
    for m in masters:
        ratios[f"{m}OverImport"] = ratio(f"spark-load-{m}", "import-parquet")
    return ratios


def run_spark_load_bench(*, messages: int, body_size: int, masters: list[str], progress=None) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="rmqtool-bench-spark-"))
    try:
        if progress:
            progress.print(f"generating {messages} rows ...")
        source, warm = tmp / "rows.parquet", tmp / "warm.parquet"
        generate_rows(source, messages, body_size)
        generate_rows(warm, 2000, body_size, seed=1, row_group=_WARM_ROW_GROUP)
        results, timed = [], {}
        for mode in ["import", *masters]:
            if progress:
                progress.print(f"{mode} ...")
            target = tmp / f"store-{len(results)}"
            out = subprocess.run([sys.executable, "-c", _CHILD, mode, str(source), str(warm), str(target)],
                                 capture_output=True, text=True)
            if out.returncode:
                raise RmqError(f"bench spark-load ({mode}) failed: {out.stderr.strip().splitlines()[-1:]}")
            doc = json.loads(out.stdout.strip().splitlines()[-1])
            name = "import-parquet" if mode == "import" else f"spark-load-{mode}"
            timed[name] = (doc["messages"], doc["seconds"])
            results.append(throughput(name, doc["messages"], doc["bytes"], doc["seconds"], doc["peak"],
                                      setupSeconds=round(doc["setup"], 2)))
            shutil.rmtree(target, ignore_errors=True)
            shutil.rmtree(str(target) + "-warm", ignore_errors=True)
        return {"mode": "spark-load", "messages": messages, "bodySize": body_size, "runs": results,
                "ratios": speed_ratios(timed, masters)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
