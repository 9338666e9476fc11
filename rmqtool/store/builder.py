"""Build a store from messages in memory, with the broker's append and dispatch rules:
segment rolls with blank markers, queue offsets per topic-queue, consume queues, the hash
index and the checkpoint. Used for fixtures and tests; sized for small stores."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np

from rmqtool.format import checkpoint, consumequeue, index, message, properties, sysflag
from rmqtool.format.crc import body_crc
from rmqtool.store.config import StoreConfig
from rmqtool.store.paths import StorePaths, offset_name


class _IndexWriter:
    """Index files filled the way the broker's IndexService fills them."""

    def __init__(self, cfg: StoreConfig) -> None:
        self.slots, self.num = cfg.maxHashSlotNum, cfg.maxIndexNum
        self.files: list[tuple[str, bytearray]] = []

    def _current(self, store_ts: int) -> bytearray:
        if not self.files or self._header(self.files[-1][1])["indexCount"] >= self.num:
            buf = bytearray(index.file_len(self.slots, self.num))
            hdr = np.zeros(1, dtype=index.HEADER_DTYPE)
            hdr["indexCount"] = index.FIRST_INDEX
            buf[: index.HEADER_LEN] = hdr.tobytes()
            self.files.append((index.file_name(store_ts), buf))
        return self.files[-1][1]

    @staticmethod
    def _header(buf: bytearray) -> np.void:
        return np.frombuffer(buf, dtype=index.HEADER_DTYPE, count=1)[0]

    def put(self, key: str, phy_offset: int, store_ts: int) -> None:
        buf = self._current(store_ts)
        hdr = np.frombuffer(buf, dtype=index.HEADER_DTYPE, count=1)
        slots = np.frombuffer(buf, dtype=index.SLOT_DTYPE, count=self.slots, offset=index.HEADER_LEN)
        entries = np.frombuffer(buf, dtype=index.ENTRY_DTYPE, count=self.num,
                                offset=index.HEADER_LEN + self.slots * index.SLOT_LEN)
        h = index.key_hash(key)
        slot = index.slot_of(h, self.slots)
        count = int(hdr["indexCount"][0])
        prev = int(slots[slot])
        if prev <= index.INVALID_INDEX or prev > count:
            prev = index.INVALID_INDEX
        begin = int(hdr["beginTimestamp"][0])
        diff = 0 if begin <= 0 else min(max((store_ts - begin) // 1000, 0), 2**31 - 1)
        entries[count] = (h, phy_offset, diff, prev)
        slots[slot] = count
        if count <= index.FIRST_INDEX:
            hdr["beginPhyOffset"], hdr["beginTimestamp"] = phy_offset, store_ts
        if prev == index.INVALID_INDEX:
            hdr["hashSlotCount"] += 1
        hdr["indexCount"] = count + 1
        hdr["endPhyOffset"], hdr["endTimestamp"] = phy_offset, store_ts


class StoreBuilder:
    """Append messages, then `write()` the store files under `root`."""

    def __init__(self, root: str | os.PathLike, config: StoreConfig | None = None) -> None:
        self.paths = StorePaths(root)
        self.cfg = config or StoreConfig()
        self.segments: list[bytearray] = []
        self.wrote = 0  # physical offset of the next record
        self.queue_offsets: dict[tuple[str, int], int] = {}
        self.queues: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
        self.index = _IndexWriter(self.cfg)
        self.times = [0, 0, 0]  # physic, logics, index

    def append(self, msg: message.Message) -> message.Message:
        """Store `msg` (its storeTimestamp and hosts as given); returns the record as stored."""
        size = self.cfg.mappedFileSizeCommitLog
        tx = sysflag.transaction_type(msg.sys_flag)
        key = (msg.topic, msg.queue_id)
        queued = tx in (sysflag.TRANSACTION_NOT, sysflag.TRANSACTION_COMMIT)
        rec = replace(msg.with_host_flags(), body_crc=body_crc(msg.body),
                      queue_offset=self.queue_offsets.get(key, 0) if queued else 0)
        length = message.encoded_len(rec)
        if length > self.cfg.maxMessageSize:
            raise ValueError(f"record of {length} bytes exceeds maxMessageSize")
        seg_pos = self.wrote % size
        if self.wrote == len(self.segments) * size:
            self.segments.append(bytearray(size))
        elif length + message.BLANK_MARKER_LEN > size - seg_pos:
            self.segments[-1][seg_pos : seg_pos + 8] = message.encode_blank(size - seg_pos)
            self.wrote += size - seg_pos
            self.segments.append(bytearray(size))
            seg_pos = 0
        rec = replace(rec, physical_offset=self.wrote)
        rec.store_size = message.encode_into(self.segments[-1], seg_pos, rec)
        self.wrote += rec.store_size
        self.times[0] = rec.store_timestamp
        if queued:
            self.queue_offsets[key] = rec.queue_offset + 1
            code = consumequeue.tags_code(rec.topic, properties.parse_java(rec.properties_string),
                                          rec.store_timestamp, self.cfg.delay_levels_ms)
            self.queues.setdefault(key, []).append((rec.physical_offset, rec.store_size, code))
            self.times[1] = rec.store_timestamp
        if self.cfg.messageIndexEnable and tx != sysflag.TRANSACTION_ROLLBACK:
            props = properties.parse_java(rec.properties_string)
            keys = ([props[properties.UNIQ_KEY]] if properties.UNIQ_KEY in props else []) + properties.keys_of(props)
            for k in keys:
                self.index.put(index.index_key(rec.topic, k), rec.physical_offset, rec.store_timestamp)
            self.times[2] = rec.store_timestamp
        return rec

    def write(self) -> None:
        """Write commitlog segments, consume queues, index files and the checkpoint."""
        self.paths.commitlog.mkdir(parents=True, exist_ok=True)
        size = self.cfg.mappedFileSizeCommitLog
        for i, seg in enumerate(self.segments):
            (self.paths.commitlog / offset_name(i * size)).write_bytes(seg)
        per_file = self.cfg.mappedFileSizeConsumeQueue
        for (topic, qid), rows in self.queues.items():
            directory = self.paths.queue_dir(topic, qid)
            directory.mkdir(parents=True, exist_ok=True)
            data = consumequeue.encode_entries(*zip(*rows, strict=True))
            for start in range(0, len(data), per_file):
                chunk = data[start : start + per_file]
                (directory / offset_name(start)).write_bytes(chunk + bytes(per_file - len(chunk)))
        if self.index.files:
            self.paths.index.mkdir(parents=True, exist_ok=True)
        for name, buf in self.index.files:
            (self.paths.index / name).write_bytes(buf)
        cp = checkpoint.Checkpoint(*self.times)
        self.paths.checkpoint.write_bytes(checkpoint.encode(cp))


def build_store(root: str | os.PathLike, messages, config: StoreConfig | None = None) -> list[message.Message]:
    """Build a store at `root` from `messages`; returns them as stored."""
    builder = StoreBuilder(root, config)
    stored = [builder.append(m) for m in messages]
    builder.write()
    return stored



