"""`rmqtool bench append`: how fast a fresh store takes messages, dispatch included.

Messages look like a producer's: a UNIQ_KEY (indexed) and a TAGS property, bodies of the
given size, four queues of one topic taken in turn. Single appends go through
`MessageStore.put_message` one at a time; batches through `put_batch` as client batch
bodies. Input is built before the clock runs; the clock covers the appends and the
dispatch of every record into consume queues and the index (and, with sync flush, every
fdatasync); the store's close (the last flush and fdatasync of every file) is timed apart, as
`closeSeconds`, as the broker's own bench loop leaves its shutdown out. The
store is the broker's default geometry: 1 GiB segments, 300 000-entry queue files, 5 M slots
x 20 M entries of index.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from rmqtool.bench.scan import peak_rss_bytes, reset_peak_rss, throughput
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.message_store import FLUSH_ASYNC, FLUSH_SYNC, MessageStore
from rmqtool.engine.producer import DEFAULT_BORN_HOST, DEFAULT_STORE_HOST
from rmqtool.errors import RmqError
from rmqtool.structures.commitlog import batch, properties
from rmqtool.structures.commitlog.message import Message

TOPIC = "BenchTopic"
QUEUES = 4
TAGS = "TagA"
CHUNK = 1 << 16  # messages generated per round outside the clock
_HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
_KEY_DIGITS = 32
_ITEM_HEAD = batch.ITEM_HEAD_LEN


_PROPS_PREFIX = (f"{properties.TAGS}{properties.NAME_VALUE_SEPARATOR}{TAGS}{properties.PROPERTY_SEPARATOR}"
                 f"{properties.UNIQ_KEY}{properties.NAME_VALUE_SEPARATOR}").encode()
_KEY_FIXED = b"7F00000100002A9F"  # the client part of a UNIQ_KEY; a counter fills the other 16 digits


def unique_keys(first: int, count: int) -> np.ndarray:
    """`count` distinct 32-hex-digit keys as a (count, 32) uint8 array."""
    n = np.arange(first, first + count, dtype=np.uint64)
    shifts = np.arange(15, -1, -1, dtype=np.uint64) * np.uint64(4)
    keys = np.empty((count, _KEY_DIGITS), dtype=np.uint8)
    keys[:, : len(_KEY_FIXED)] = np.frombuffer(_KEY_FIXED, dtype=np.uint8)
    keys[:, len(_KEY_FIXED) :] = _HEX[((n[:, None] >> shifts) & np.uint64(0xF)).astype(np.intp)]
    return keys


def client_items(first: int, count: int, body: bytes) -> tuple[np.ndarray, int]:
    """`count` client batch items (one per row) with distinct keys; returns (rows, item length)."""
    prefix = _PROPS_PREFIX
    props_len = len(prefix) + _KEY_DIGITS
    item_len = _ITEM_HEAD + len(body) + 2 + props_len
    rows = np.zeros((count, item_len), dtype=np.uint8)
    head = np.zeros(count, dtype=batch.ITEM.dtype())
    head["totalSize"], head["bodyLength"] = item_len, len(body)
    rows[:, :_ITEM_HEAD] = head.view(np.uint8).reshape(count, _ITEM_HEAD)
    p = _ITEM_HEAD
    rows[:, p : p + len(body)] = np.frombuffer(body, dtype=np.uint8)
    p += len(body)
    rows[:, p : p + 2] = np.frombuffer(props_len.to_bytes(2, "big"), dtype=np.uint8)
    p += 2
    rows[:, p : p + len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
    p += len(prefix)
    rows[:, p : p + _KEY_DIGITS] = unique_keys(first, count)
    return rows, item_len


def run_append_bench(*, messages: int, body_size: int, batch: int, flush: str, progress=None) -> dict:
    if flush not in (FLUSH_SYNC, FLUSH_ASYNC):
        raise RmqError(f"--flush must be sync or async, not {flush!r}")
    body = bytes((np.arange(body_size) % 251).astype(np.uint8))
    tmp = Path(tempfile.mkdtemp(prefix="rmqtool-bench-append-"))
    try:
        _warm_up(tmp / "warm-up", body)
        reset_peak_rss()
        store = MessageStore(tmp / "store", flush=flush)
        elapsed, nbytes = 0.0, 0
        done = 0
        rounds = 0
        while done < messages:
            count = min(CHUNK, messages - done)
            rows, item_len = client_items(done, count, body)
            if batch == 1:
                inputs = _single_messages(rows, item_len, body_size)
                t0 = time.perf_counter()
                for i, msg in enumerate(inputs):
                    msg.queue_id = (done + i) % QUEUES
                    result = store.put_message(msg)
                    nbytes += result.wrote_bytes
            else:
                bodies = [rows[a : a + batch].tobytes() for a in range(0, count, batch)]
                t0 = time.perf_counter()
                for k, blob in enumerate(bodies):
                    result = store.put_batch(TOPIC, (rounds + k) % QUEUES, blob, born_timestamp=0,
                                             born_host=DEFAULT_BORN_HOST, store_host=DEFAULT_STORE_HOST)
                    if not result.ok:
                        raise RmqError(f"bench batch refused: {result.status.value}: {result.reason}")
                    nbytes += result.wrote_bytes
                rounds += len(bodies)
            elapsed += time.perf_counter() - t0
            done += count
            if progress:
                progress.print(f"  {done} / {messages}", end="\r")
        t0 = time.perf_counter()
        store.dispatch()
        elapsed += time.perf_counter() - t0
        peak = peak_rss_bytes()
        t0 = time.perf_counter()
        store.close()
        closing = time.perf_counter() - t0
        result = throughput(f"append-{'single' if batch == 1 else f'batch-{batch}'}-{flush}", messages, nbytes,
                            elapsed, peak)
        result["closeSeconds"] = round(closing, 4)
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _warm_up(root: Path, body: bytes) -> None:
    """Compile (or load) every kernel the clock would otherwise include."""
    cfg = StoreConfig()
    cfg.mappedFileSizeCommitLog, cfg.maxHashSlotNum, cfg.maxIndexNum = 1 << 20, 64, 256
    rows, item_len = client_items(0, 4, body)
    with MessageStore(root, cfg) as store:
        store.put_message(_single_messages(rows, item_len, len(body))[0])
        store.put_batch(TOPIC, 0, rows.tobytes(), born_host=DEFAULT_BORN_HOST, store_host=DEFAULT_STORE_HOST)
        store.dispatch()
    shutil.rmtree(root, ignore_errors=True)


def _single_messages(rows: np.ndarray, item_len: int, body_size: int) -> list[Message]:
    props_at = _ITEM_HEAD + body_size + 2
    body = bytes(rows[0, _ITEM_HEAD : _ITEM_HEAD + body_size])
    return [Message(topic=TOPIC, body=body, properties_string=row[props_at:].tobytes().decode("ascii"),
                    born_host=DEFAULT_BORN_HOST, store_host=DEFAULT_STORE_HOST) for row in rows]
