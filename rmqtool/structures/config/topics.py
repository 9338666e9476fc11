"""`config/topics.json`: the broker's topic table, so a broker started on a written store serves its topics.

The shape is what the 4.9 broker's TopicConfigManager persists: `topicConfigTable` (topic ->
TopicConfig fields) and `dataVersion` (timestamp, counter). A merge keeps every entry that
is there, raises read/write queue numbers to cover the highest queue id written and every queue
folder the store already holds for a topic written (`queues_to_register`), never lowers them, adds
the missing topics, and bumps the data version. It is written the way the broker writes it
(`persist.save`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.files.paths import StorePaths
from rmqtool.structures.commitlog.delay import SCHEDULE_TOPIC
from rmqtool.structures.config import fastjson, persist

TOPICS_FILE = "topics.json"
PERM_READ_WRITE = 6  # PermName.PERM_READ | PermName.PERM_WRITE
_SYSTEM_TOPICS = (SCHEDULE_TOPIC,)  # the broker creates these itself, with its own queue numbers


def topics_path(root: Path) -> Path:
    return Path(root) / "config" / TOPICS_FILE


def topic_config(name: str, queues: int) -> dict:
    """A TopicConfig as the broker serialises it (fields in name order, as fastjson writes them)."""
    return {"order": False, "perm": PERM_READ_WRITE, "readQueueNums": queues, "topicFilterType": "SINGLE_TAG",
            "topicName": name, "topicSysFlag": 0, "writeQueueNums": queues}


def queue_folders(root: Path, topic: str) -> int:
    """Queues the store holds for `topic`: its highest `consumequeue/<topic>/<id>` folder + 1 (0 without one)."""
    try:
        entries = list(os.scandir(StorePaths(root).consumequeue / topic))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    return max((int(e.name) + 1 for e in entries if e.name.isdigit() and e.is_dir()), default=0)


def queues_to_register(root: Path, written: Mapping[str, int]) -> dict[str, int]:
    """Queues to register for each topic written: the queue ids written, and at least the queue folders
    the store has for it, so a broker started on the store serves (and shows) every queue that holds messages."""
    return {topic: max(need, queue_folders(root, topic)) for topic, need in written.items()}


def read_table(path: Path) -> dict:
    """The topics.json document, or an empty one when there is none."""
    text = persist.read_text(path)
    if text is None:
        return {}
    try:
        doc = fastjson.loads(text) if text.strip() else {}
    except ValueError as e:
        raise RmqError(f"{path}: not JSON ({e}); move it away or pass --no-register-topics") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("topicConfigTable", {}), dict):
        raise RmqError(f"{path}: not a topic table; move it away or pass --no-register-topics")
    return doc


def register(root: Path, queues: Mapping[str, int], now_ms: int | None = None) -> bool:
    """Merge topics (name -> queues needed) into `config/topics.json`; returns whether it changed."""
    path = topics_path(root)
    doc = read_table(path)
    table = doc.setdefault("topicConfigTable", {})
    changed = False
    for name, need in sorted(queues.items()):
        if name in _SYSTEM_TOPICS or need <= 0:
            continue
        entry = table.get(name)
        if entry is None:
            table[name] = topic_config(name, need)
            changed = True
            continue
        for field in ("readQueueNums", "writeQueueNums"):
            if int(entry.get(field, 0)) < need:
                entry[field] = need
                changed = True
    if not changed:
        return False
    version = doc.get("dataVersion") or {}
    doc["dataVersion"] = {"counter": int(version.get("counter", 0)) + 1,
                          "timestamp": time.time_ns() // 1_000_000 if now_ms is None else now_ms}
    persist.save(path, doc)
    return True

