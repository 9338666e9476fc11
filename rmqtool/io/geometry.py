"""The geometry an export carries: the sizes of its store's files and the broker address its records name.

An export's records go back to their commitLogOffsets, which only fit a store whose segments have the
size the exported store's had. `export` records that geometry (`SETTINGS`, broker.conf names, and
`storeHost`, the newest record's broker address) in the file: Parquet as key-value metadata under
`PARQUET_KEY`, JSONL in a sidecar `<out>.geometry.json` (so every line of the export stays one message).
`spark-export`'s dataset keeps it in the folder of its part files, `DATASET_FILE` (Spark's readers skip a `_`
name; of several stores, one in each `brokerName=NAME/`), which each of its part files, Parquet or JSON lines, is
read with.
`import` into a new store uses it where --config does not set the value, and refuses a --config that
contradicts it, naming both values.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from rmqtool.engine.config import StoreConfig
from rmqtool.errors import RmqError

SETTINGS = ("mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue", "maxHashSlotNum", "maxIndexNum")
STORE_HOST = "storeHost"
PARQUET_KEY = b"rmqtool.geometry"
SIDECAR_SUFFIX = ".geometry.json"
DATASET_FILE = "_geometry.json"
_MAX_SIDECAR_BYTES = 1 << 16


def of_store(cfg: StoreConfig, store_host: str | None) -> dict:
    """The geometry of a store opened with `cfg` (its files' sizes resolved), and its broker address."""
    doc: dict = {name: getattr(cfg, name) for name in SETTINGS}
    if store_host is not None:
        doc[STORE_HOST] = store_host
    return doc


def sidecar(path: str | os.PathLike) -> Path:
    """Where a JSONL export's geometry is kept: beside it, `<path>.geometry.json`."""
    return Path(f"{os.fspath(path)}{SIDECAR_SUFFIX}")


def encode(geometry: dict) -> bytes:
    return json.dumps(geometry, sort_keys=True).encode()


def read(path: str, fmt: str) -> dict | None:
    """The geometry an input file carries (None: it carries none); a malformed one is an RmqError naming it."""
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            meta = pq.read_metadata(path).metadata or {}
        except (pa.ArrowException, OSError) as e:
            raise RmqError(f"{path}: not a readable Parquet file ({e})") from None
        data, where = meta.get(PARQUET_KEY), f"{path}: Parquet metadata {PARQUET_KEY.decode()}"
    elif fmt == "jsonl" and sidecar(path).is_file():
        data, where = _small(sidecar(path)), str(sidecar(path))
    else:
        data = None
    dataset = Path(path).parent / DATASET_FILE
    if data is None and fmt in ("parquet", "jsonl") and dataset.is_file():  # a part file of a spark-export
        data, where = _small(dataset), str(dataset)
    if data is None:
        return None
    return _checked(data, where)


def _small(path: Path) -> bytes:
    """A geometry file's bytes, at most one past the longest a geometry is (`_checked` refuses a longer one)."""
    with open(path, "rb") as f:
        return f.read(_MAX_SIDECAR_BYTES + 1)


def _checked(data: bytes, where: str) -> dict:
    try:
        doc = json.loads(data) if len(data) <= _MAX_SIDECAR_BYTES else None
    except (ValueError, RecursionError):
        doc = None
    if not isinstance(doc, dict):
        raise RmqError(f"{where}: not a geometry (a JSON object of {', '.join(SETTINGS)})")
    for name in SETTINGS:
        value = doc.get(name)
        if value is not None and (type(value) is not int or not 0 < value < 1 << 31):
            raise RmqError(f"{where}: {name} {value!r} is not a positive 32-bit size")
    if not isinstance(doc.get(STORE_HOST, ""), str):
        raise RmqError(f"{where}: {STORE_HOST} {doc[STORE_HOST]!r} is not an address")
    return doc


def applied(cfg: StoreConfig, geometry: dict, source: str, *, strict: bool = True) -> StoreConfig:
    """`cfg` with the sizes `geometry` names where the broker.conf set none; a value it set otherwise is
    refused, naming the setting and both values (not `strict`: the broker.conf's value is kept)."""
    changes = {}
    for name in SETTINGS:
        value = geometry.get(name)
        if value is None or value == getattr(cfg, name) or (name in cfg.given and not strict):
            continue
        if name in cfg.given:
            raise RmqError(f"{source} was exported from a store with {name}={value}, but --config says "
                           f"{name}={getattr(cfg, name)}: give the exported store's broker.conf, or leave --config "
                           "out to take the export's geometry")
        changes[name] = value
    return replace(cfg, **changes) if changes else cfg
