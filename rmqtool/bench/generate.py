"""Generate a large store fast: one template record, per-record fields patched with numpy.

Every record is encoded by `format.message` once (the template); only fixed-width fields
(queue id and offset, physical offset, timestamps, body bytes, body CRC, the unique key)
vary, so whole segments are produced with vectorized writes, chunk by chunk.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rmqtool.format import checkpoint, consumequeue, message, properties
from rmqtool.format.crc import POSITIVE_MASK
from rmqtool.format.hosts import parse_host
from rmqtool.store.paths import StorePaths, offset_name

BENCH_TOPIC = "BenchTopic"
BASE_TIME = 1_700_000_000_000
_CHUNK = 1 << 18
_HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
_UNIQ_PREFIX = "C0A8000100002A9F0000"  # 20 fixed hex chars, then 12 from the counter
_V4_HEADER = message.header_dtype(False, False)


@dataclass
class GeneratedStore:
    root: Path
    messages: int
    record_len: int
    segments: int
    bytes: int


def _template(body_size: int) -> tuple[np.ndarray, dict[str, int]]:
    props = properties.build({properties.UNIQ_KEY: _UNIQ_PREFIX + "0" * 12, properties.TAGS: "TagA",
                              properties.KEYS: "bench-key"})
    msg = message.Message(topic=BENCH_TOPIC, body=bytes(body_size), properties_string=props,
                          born_host=parse_host("10.0.0.1:40000"), store_host=parse_host("10.0.0.2:10911"))
    rec = np.frombuffer(message.encode(msg), dtype=np.uint8)
    where = {"body": _V4_HEADER.itemsize}
    where["uniq"] = rec.tobytes().index(_UNIQ_PREFIX.encode()) + len(_UNIQ_PREFIX)
    return rec, where


def _put(rows: np.ndarray, name: str, values: np.ndarray) -> None:
    """Write one fixed field of the record layout into every row."""
    kind, at = _V4_HEADER.fields[name]
    rows[:, at : at + kind.itemsize] = values.astype(kind).view(np.uint8).reshape(-1, kind.itemsize)


def generate_store(root: str | os.PathLike, messages: int, body_size: int = 100, *,
                   segment_size: int = 1 << 30, queues: int = 8, seed: int = 0,
                   cq_file_size: int = consumequeue.DEFAULT_ENTRIES_PER_FILE * consumequeue.ENTRY_LEN
                   ) -> GeneratedStore:
    """Write a store of `messages` records with random `body_size`-byte bodies under `root`."""
    paths = StorePaths(root)
    paths.commitlog.mkdir(parents=True, exist_ok=True)
    template, where = _template(body_size)
    rec_len = len(template)
    per_segment = (segment_size - message.BLANK_MARKER_LEN) // rec_len
    rng = np.random.default_rng(seed)
    n_segments = -(-messages // per_segment)
    cq_offsets = np.empty(messages, dtype=np.int64)
    done = 0
    for s in range(n_segments):
        count = min(per_segment, messages - done)
        base = s * segment_size
        with open(paths.commitlog / offset_name(base), "wb") as f:
            f.truncate(segment_size)
            for c0 in range(0, count, _CHUNK):
                n = min(_CHUNK, count - c0)
                idx = np.arange(done + c0, done + c0 + n, dtype=np.int64)
                rows = np.tile(template, (n, 1))
                phys = base + (idx - done) * rec_len
                cq_offsets[idx] = phys
                bodies = rng.integers(0, 256, size=(n, body_size), dtype=np.uint8)
                rows[:, where["body"] : where["body"] + body_size] = bodies
                flat = bodies.tobytes()
                crc = np.fromiter((zlib.crc32(flat[i : i + body_size]) for i in range(0, n * body_size, body_size)),
                                  dtype=np.int64, count=n) & POSITIVE_MASK if body_size else np.zeros(n, np.int64)
                _put(rows, "bodyCRC", crc)
                _put(rows, "queueId", idx % queues)
                _put(rows, "queueOffset", idx // queues)
                _put(rows, "physicalOffset", phys)
                _put(rows, "bornTimestamp", BASE_TIME + idx // 1000)
                _put(rows, "storeTimestamp", BASE_TIME + idx // 1000 + 1)
                digits = (idx[:, None] >> (4 * np.arange(11, -1, -1))) & 0xF
                rows[:, where["uniq"] : where["uniq"] + 12] = _HEX[digits]
                f.seek((c0) * rec_len)
                f.write(rows.tobytes())
            if done + count < messages:
                f.seek(count * rec_len)
                f.write(message.encode_blank(segment_size - count * rec_len))
        done += count
    _write_queues(paths, cq_offsets, rec_len, queues, cq_file_size)
    last_ts = BASE_TIME + (messages - 1) // 1000 + 1
    paths.checkpoint.write_bytes(checkpoint.encode(checkpoint.Checkpoint(last_ts, last_ts, last_ts)))
    return GeneratedStore(Path(root), messages, rec_len, n_segments, messages * rec_len)


def _write_queues(paths: StorePaths, offsets: np.ndarray, rec_len: int, queues: int, file_size: int) -> None:
    from rmqtool.format.javahash import java_string_hash

    tags = java_string_hash("TagA")
    for q in range(queues):
        mine = offsets[q::queues]
        data = consumequeue.encode_entries(mine, np.full(len(mine), rec_len), np.full(len(mine), tags))
        directory = paths.queue_dir(BENCH_TOPIC, q)
        directory.mkdir(parents=True, exist_ok=True)
        for start in range(0, max(len(data), 1), file_size):
            chunk = data[start : start + file_size]
            with open(directory / offset_name(start), "wb") as f:
                f.write(chunk)
                f.truncate(file_size)
