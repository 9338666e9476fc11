"""Generate a large store fast, through the load path: producer rows made in Arrow chunks and
loaded as `rmqtool import` loads them (records, queues and index written by the engine).

Every message has the same shape (topic, tags, keys, hosts and body size), so every record has
the same length: a message's physical offset follows from its number and `record_len`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rmqtool.engine.config import StoreConfig
from rmqtool.files.paths import StorePaths, offset_name
from rmqtool.io.sources import TableSource
from rmqtool.load.records import LoadOptions
from rmqtool.load.writer import load
from rmqtool.structures import consumequeue
from rmqtool.structures.commitlog import message, uniqkey
from rmqtool.structures.commitlog.hosts import parse_host
from rmqtool.structures.commitlog.uniqkernel import put_load_keys

BENCH_TOPIC = "BenchTopic"
BASE_TIME = 1_700_000_000_000
BORN_HOST, STORE_HOST_TEXT = "10.0.0.1:40000", "10.0.0.2:10911"
_CHUNK = 1 << 16
_NAMES = ("topic", "queueId", "body", "tags", "keys", "bornTimestamp", "bornHost", "storeHost")


@dataclass
class GeneratedStore:
    root: Path
    messages: int
    record_len: int
    segments: int
    bytes: int
    store_time: int = BASE_TIME  # the load's storeTimestamp, which its unique keys are made from

    def unique_key(self, i: int) -> str:
        """The UNIQ_KEY the load gave message `i`: the load's rule (`uniqkernel`) for row `i` born at
        BORN_HOST, stored at `store_time`."""
        digits = np.zeros(uniqkey.LEN, dtype=np.uint8)
        ip4 = np.frombuffer(parse_host(BORN_HOST).address, dtype=np.uint8).reshape(1, 4)
        put_load_keys(digits, np.zeros(1, dtype=np.int64), ip4, uniqkey.load_stamp(self.store_time),
                      np.array([i], dtype=np.int64))
        return digits.tobytes().decode()


def _rows(messages: int, body_size: int, queues: int, seed: int) -> Iterator:
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    for a in range(0, messages, _CHUNK):
        n = min(_CHUNK, messages - a)
        idx = np.arange(a, a + n, dtype=np.int64)
        raw = rng.integers(0, 256, n * body_size, dtype=np.uint8)
        offsets = np.arange(0, (n + 1) * body_size, body_size, dtype=np.int64)
        body = pa.LargeBinaryArray.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets),
                                                                        pa.py_buffer(raw)])
        const = {name: pa.array(np.full(n, value)) for name, value in
                 (("topic", BENCH_TOPIC), ("tags", "TagA"), ("keys", "bench-key"), ("bornHost", BORN_HOST),
                  ("storeHost", STORE_HOST_TEXT))}
        yield pa.RecordBatch.from_pydict({**const, "queueId": idx % queues, "body": body,
                                          "bornTimestamp": BASE_TIME + idx // 1000})


def generate_store(root: str | os.PathLike, messages: int, body_size: int = 100, *,
                   segment_size: int = 1 << 30, queues: int = 8, seed: int = 0,
                   cq_file_size: int = consumequeue.DEFAULT_FILE_SIZE,
                   config: StoreConfig | None = None) -> GeneratedStore:
    """Write a store of `messages` records with random `body_size`-byte bodies under `root` (with
    `config`'s other settings, such as the index geometry, when given)."""
    cfg = dataclasses.replace(config) if config else StoreConfig()
    cfg.mappedFileSizeCommitLog, cfg.mappedFileSizeConsumeQueue = segment_size, cq_file_size
    store_time = BASE_TIME + messages // 1000 + 1
    summary = load(root, TableSource(_rows(messages, body_size, queues, seed), _NAMES), LoadOptions(cfg, store_time),
                   register_topics=False)
    record_len = 0
    if messages:
        with open(StorePaths(root).commitlog / offset_name(0), "rb") as f:
            record_len = message.decode(f.read(message.MIN_RECORD_LEN + body_size + 4096), 0).store_size
    segments = -(-summary.end_offset // segment_size) if summary.end_offset else 0
    return GeneratedStore(Path(root), messages, record_len, segments, summary.bytes, store_time)
