"""What kind of store a folder holds, told by its files alone, and what rmqtool may write to it.

Kinds:
- `4x`: a 4.x store (or a 5.x store that uses no 5.x-only structure: the two are identical);
- `5x-file`: 5.x with 20-byte consume-queue files, known by a 5.x-only trace (v2 records,
  the `__CRC32#` property, the checkpoint's 5.x longs, the timer or compaction stores, ...);
- `5x-rocksdb`: 5.x whose `consumequeue/` is a RocksDB database;
- `dledger`: a DLedger commitlog (`dledger-<id>/data`): records wrapped in DLedger entries.
Only a `4x` store is written to: rmqtool writes exactly what the 4.9 broker writes, and no
other broker's store is changed by a rule it does not follow.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from rmqtool.files.paths import DLEDGER_PREFIX, StorePaths
from rmqtool.files.segments import list_segments, read_file
from rmqtool.structures import checkpoint, epoch
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.crc import CRC32_PROPERTY
from rmqtool.structures.consumequeue.queues import is_rocksdb
from rmqtool.structures.epoch import identity
from rmqtool.structures.timerlog import TIMER_FILES

KIND_4X, KIND_5X_FILE, KIND_5X_ROCKSDB, KIND_DLEDGER = "4x", "5x-file", "5x-rocksdb", "dledger"
LABELS = {
    KIND_4X: "RocketMQ 4.x store (file consume queues)",
    KIND_5X_FILE: "RocketMQ 5.x store with file consume queues",
    KIND_5X_ROCKSDB: "RocketMQ 5.x store with the RocksDB consume queue",
    KIND_DLEDGER: "DLedger commitlog store",
}
CONTROLLER_FILES = (epoch.FILE, identity.FILE)  # written by 5.x brokers in controller mode
COMPACTION_DIR = "compaction"
BATCH_QUEUE_DIR = "batchconsumequeue"
_SAMPLE_BYTES = 64 << 10  # of each sampled segment: enough for its first records


@dataclass
class StoreKind:
    kind: str
    evidence: list[str] = field(default_factory=list)
    dledger_dirs: list[Path] = field(default_factory=list)
    timer_store: bool = False
    batch_queue_topics: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return LABELS[self.kind]

    @property
    def writable(self) -> bool:
        return self.kind == KIND_4X and not self.timer_store and not self.batch_queue_topics

    def to_json(self) -> dict:
        return {"kind": self.kind, "label": self.label, "writable": self.writable, "evidence": self.evidence,
                "dledger": [str(d) for d in self.dledger_dirs], "timerStore": self.timer_store,
                "batchConsumeQueueTopics": self.batch_queue_topics}


def detect(paths: StorePaths) -> StoreKind:
    """The kind of the store at `paths`, with the files that show it (nothing is opened for writing)."""
    root = paths.root
    dledger = sorted(p / "data" for p in _subdirs(root) if p.name.startswith(DLEDGER_PREFIX) and (p / "data").is_dir())
    five: list[str] = []
    if paths.consumequeue.is_dir() and is_rocksdb(paths.consumequeue):
        five.append(f"{paths.consumequeue.name}/ holds a RocksDB database")
    timer = [name for name in TIMER_FILES if (root / name).exists()]
    if timer:
        five.append("timer store: " + ", ".join(timer))
    if (root / COMPACTION_DIR).is_dir():
        five.append(f"{COMPACTION_DIR}/ (the 5.x compaction store)")
    ha = [name for name in CONTROLLER_FILES if (root / name).exists() or (root / f"{name}.bak").exists()]
    if ha:
        five.append("5.x controller-mode HA state: " + ", ".join(ha))
    batch = sorted(p.name for p in _subdirs(root / BATCH_QUEUE_DIR))
    if batch:
        five.append(f"{BATCH_QUEUE_DIR}/ holds {len(batch)} topic(s)")
    five.extend(_record_traces(paths.commitlog))
    five.extend(_checkpoint_traces(paths.checkpoint))
    if dledger:
        kind = KIND_DLEDGER
        evidence = [f"{d.relative_to(root)} holds DLedger entries" for d in dledger] + five
    elif paths.consumequeue.is_dir() and is_rocksdb(paths.consumequeue):
        kind, evidence = KIND_5X_ROCKSDB, five
    elif five:
        kind, evidence = KIND_5X_FILE, five
    else:
        kind = KIND_4X
        evidence = ["no 5.x-only file or record found"] if paths.commitlog.is_dir() else ["no store files yet"]
    return StoreKind(kind, evidence, dledger, bool(timer), batch)


def _subdirs(path: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(path) if e.is_dir()]
    except OSError:
        return []


def _record_traces(commitlog: Path) -> list[str]:
    """5.x-only traces in the first records of the first and the last segment."""
    segments = list_segments(commitlog)
    found: dict[str, str] = {}  # trace -> the first segment showing it
    for seg in {s.path: s for s in (segments[:1] + segments[-1:])}.values():
        with open(seg.path, "rb") as f:
            buf = f.read(_SAMPLE_BYTES)
        pos = 0
        while pos < len(buf):  # a record cut short by the sample decodes as Corrupt
            rec = message.decode(buf, pos, verify_crc=False)
            if not isinstance(rec, message.Message):
                break
            if rec.magic == message.MAGIC_V2:
                found.setdefault("message v2 records (topics over 127 bytes)", seg.path.name)
            if CRC32_PROPERTY.decode() in rec.properties_string:
                found.setdefault("records carry the __CRC32# property", seg.path.name)
            pos += rec.store_size
    return [f"{trace} (commitlog/{name})" for trace, name in found.items()]


def _checkpoint_traces(path: Path) -> list[str]:
    if not path.is_file():
        return []
    buf = read_file(path)
    if checkpoint.refusal(buf) is not None:
        return []
    cp = checkpoint.decode(buf)
    return ["checkpoint holds the 5.x longs (masterFlushedOffset, confirmPhyOffset)"] \
        if cp.masterFlushedOffset is not None else []
