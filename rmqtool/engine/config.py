"""Store settings with RocketMQ's defaults, read from a broker.conf (Java properties syntax)."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field, fields

from rmqtool.engine.broker_keys import BROKER_KEYS, OLDER_SPELLINGS
from rmqtool.errors import RmqError, warn
from rmqtool.structures import consumequeue, ha, index
from rmqtool.structures.commitlog.delay import DEFAULT_DELAY_LEVELS, parse_delay_levels
from rmqtool.structures.commitlog.geometry import size_refusal as segment_refusal
from rmqtool.structures.commitlog.message import DEFAULT_MAX_MESSAGE_SIZE
from rmqtool.structures.consumequeue.geometry import size_refusal as queue_refusal
from rmqtool.structures.index.geometry import geometry_refusal

ASYNC_FLUSH = "ASYNC_FLUSH"
SYNC_FLUSH = "SYNC_FLUSH"
MAX_CONFIG_BYTES = 1 << 20  # a broker.conf is a few KiB of text


@dataclass
class StoreConfig:
    """broker.conf keys that shape the store, named as the broker names them."""

    storePathRootDir: str = ""
    storePathCommitLog: str = ""
    mappedFileSizeCommitLog: int = 1024 * 1024 * 1024
    mappedFileSizeConsumeQueue: int = consumequeue.DEFAULT_FILE_SIZE
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
    haListenPort: int = ha.DEFAULT_LISTEN_PORT
    haMasterAddress: str = ""
    haSendHeartbeatInterval: int = ha.DEFAULT_HEARTBEAT_MS
    haHousekeepingInterval: int = ha.DEFAULT_HOUSEKEEPING_MS
    haTransferBatchSize: int = ha.DEFAULT_BATCH
    haSlaveFallbehindMax: int = ha.DEFAULT_FALLBEHIND
    slaveTimeout: int = ha.DEFAULT_SLAVE_TIMEOUT_MS
    warmMapedFileEnable: bool = False  # allocate every new file whole (rmqtool: --preallocate); sparse otherwise
    given: frozenset[str] = field(default=frozenset(), compare=False, repr=False)  # keys a broker.conf set

    @property
    def delay_levels_ms(self) -> list[int]:
        return parse_delay_levels(self.messageDelayLevel)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> tuple[StoreConfig, set[str]]:
        """The config a broker.conf describes, and the keys it set explicitly."""
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_CONFIG_BYTES + 1)
        except OSError as e:
            raise RmqError(f"cannot read config {path}: {e.strerror}") from None
        if len(data) > MAX_CONFIG_BYTES or b"\0" in data:
            raise RmqError(f"{path}: not a broker.conf (a binary file or over {MAX_CONFIG_BYTES} bytes)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("latin-1")  # java.util.Properties reads ISO 8859-1
        props = parse_properties(text)
        unknown = unknown_keys(props)
        if unknown and len(unknown) == len(props):
            raise RmqError(f"{path}: not a broker.conf (none of its {len(props)} keys is a broker setting, "
                           f"e.g. {unknown[0]!r})")
        for key in unknown:
            guess = difflib.get_close_matches(key, BROKER_KEYS, n=1)
            hint = f" (did you mean {guess[0]}?)" if guess else ""
            warn(f"{path}: {key!r} is not a broker setting; ignored{hint}")
        return cls.from_properties(props, str(path))

    @classmethod
    def from_properties(cls, props: dict[str, str], source: str = "config") -> tuple[StoreConfig, set[str]]:
        cfg = cls()
        given = set()
        types = {f.name: f.type for f in fields(cls) if f.name != "given"}
        for key, raw in props.items():
            key = OLDER_SPELLINGS.get(key, key)
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
        cfg.given = frozenset(given)
        cfg.validate(source)
        return cfg, given

    def validate(self, source: str = "config") -> None:
        """Refuse values the broker could not run with (zero or negative sizes, slots or entries; a
        segment smaller than one record), before any file is made by them."""

        try:
            parse_delay_levels(self.messageDelayLevel)
        except ValueError as e:
            raise RmqError(f"{source}: {e}") from None
        reasons = [segment_refusal(self.mappedFileSizeCommitLog), queue_refusal(self.mappedFileSizeConsumeQueue),
                   geometry_refusal(self.maxHashSlotNum, self.maxIndexNum),
                   f"maxMessageSize={self.maxMessageSize} is not positive" if self.maxMessageSize <= 0 else None,
                   f"maxMsgsNumBatch={self.maxMsgsNumBatch} is not positive" if self.maxMsgsNumBatch <= 0 else None,
                   *ha_refusals(self)]
        for reason in reasons:
            if reason:
                raise RmqError(f"{source}: {reason}: the broker could not run with it")


SYNC_MASTER, ASYNC_MASTER, SLAVE = "SYNC_MASTER", "ASYNC_MASTER", "SLAVE"


def ha_refusals(cfg: StoreConfig) -> list[str | None]:
    """The HA settings a broker could not replicate with."""
    positive = ("haSendHeartbeatInterval", "haHousekeepingInterval", "haTransferBatchSize", "haSlaveFallbehindMax",
                "slaveTimeout")
    reasons: list[str | None] = [f"{k}={getattr(cfg, k)} is not positive" for k in positive if getattr(cfg, k) <= 0]
    if not 0 <= cfg.haListenPort <= 65535:
        reasons.append(f"haListenPort={cfg.haListenPort} is not a TCP port")
    if cfg.brokerRole not in (SYNC_MASTER, ASYNC_MASTER, SLAVE):
        reasons.append(f"brokerRole={cfg.brokerRole!r} is not one of {SYNC_MASTER}, {ASYNC_MASTER}, {SLAVE}")
    return reasons


def unknown_keys(props: dict[str, str]) -> list[str]:
    """Keys no 4.9 or 5.x broker reads (typos, most often)."""
    return [k for k in props if k not in BROKER_KEYS]


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
