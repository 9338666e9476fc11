"""Store settings with RocketMQ's defaults, read from a broker.conf (Java properties syntax)."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

from rmqtool.errors import RmqError
from rmqtool.format import consumequeue, index
from rmqtool.format.delay import DEFAULT_DELAY_LEVELS, parse_delay_levels
from rmqtool.format.message import DEFAULT_MAX_MESSAGE_SIZE

ASYNC_FLUSH = "ASYNC_FLUSH"
SYNC_FLUSH = "SYNC_FLUSH"


@dataclass
class StoreConfig:
    """broker.conf keys that shape the store, named as the broker names them."""

    storePathRootDir: str = ""
    storePathCommitLog: str = ""
    mappedFileSizeCommitLog: int = 1024 * 1024 * 1024
    mappedFileSizeConsumeQueue: int = consumequeue.DEFAULT_ENTRIES_PER_FILE * consumequeue.ENTRY_LEN
    maxHashSlotNum: int = index.DEFAULT_HASH_SLOTS
    maxIndexNum: int = index.DEFAULT_INDEX_NUM
    maxMessageSize: int = DEFAULT_MAX_MESSAGE_SIZE
    messageDelayLevel: str = DEFAULT_DELAY_LEVELS
    flushDiskType: str = ASYNC_FLUSH
    flushIntervalCommitLog: int = 500
    checkCRCOnRecover: bool = True
    messageIndexEnable: bool = True
    messageIndexSafe: bool = False
    fileReservedTime: int = 72
    maxMsgsNumBatch: int = 64
    brokerRole: str = "ASYNC_MASTER"
    warmMapedFileEnable: bool = False  # allocate every new file whole (rmqtool: --preallocate); sparse otherwise

    @property
    def delay_levels_ms(self) -> list[int]:
        return parse_delay_levels(self.messageDelayLevel)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> tuple[StoreConfig, set[str]]:
        """The config a broker.conf describes, and the keys it set explicitly."""
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise RmqError(f"cannot read config {path}: {e.strerror}") from None
        return cls.from_properties(parse_properties(text), str(path))

    @classmethod
    def from_properties(cls, props: dict[str, str], source: str = "config") -> tuple[StoreConfig, set[str]]:
        cfg = cls()
        given = set()
        types = {f.name: f.type for f in fields(cls)}
        for key, raw in props.items():
            if key not in types:
                continue
            kind = types[key]
            try:
                if kind == "int":
                    value: object = int(raw)
                elif kind == "bool":
                    if raw.lower() not in ("true", "false"):
                        raise ValueError(raw)
                    value = raw.lower() == "true"
                else:
                    value = raw
            except ValueError:
                raise RmqError(f"{source}: {key}={raw!r} is not a valid {kind}") from None
            setattr(cfg, key, value)
            given.add(key)
        try:
            parse_delay_levels(cfg.messageDelayLevel)
        except ValueError as e:
            raise RmqError(f"{source}: {e}") from None
        if cfg.mappedFileSizeCommitLog <= 0 or cfg.mappedFileSizeConsumeQueue % consumequeue.ENTRY_LEN:
            raise RmqError(f"{source}: mapped file sizes must be positive (consume queue: a multiple of 20)")
        return cfg, given


def parse_properties(text: str) -> dict[str, str]:
    """A java.util.Properties file: `key=value` or `key: value`, `#`/`!` comments, `\\` continuations."""
    out: dict[str, str] = {}
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped[0] in "#!"):
            continue
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            pending += stripped[:-1]
            continue
        stripped = pending + stripped
        pending = ""
        seps = [i for i in (stripped.find("="), stripped.find(":")) if i >= 0]
        if seps:
            cut = min(seps)
            key, value = stripped[:cut].strip(), stripped[cut + 1 :].strip()
        else:
            key, _, value = stripped.partition(" ")
            value = value.strip()
        out[key] = value
    return out
