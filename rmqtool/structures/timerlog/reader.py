"""The 5.x timer log read unit by unit, each unit with the commitlog record it points at."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from rmqtool.errors import RmqError
from rmqtool.files.segments import list_segments, open_read_only
from rmqtool.report import ERROR, Finding
from rmqtool.structures import timerlog
from rmqtool.structures.commitlog import message, properties

TIMERLOG_DIR = "timerlog"
STRUCTURE = "timerlog"


class Records(Protocol):
    """What the timer log reader needs of an open store: the commitlog record at a physical offset."""

    def record(self, offset: int) -> message.Message:
        """The record that starts at `offset`; RmqError (NotFound) when none does."""


def timer_log_dir(root: str | os.PathLike) -> Path:
    """The store's timer log folder; a one-line refusal when the store has none."""
    directory = Path(root) / TIMERLOG_DIR
    if not directory.is_dir():
        raise RmqError(f"{root}: no timer log ({TIMERLOG_DIR}/ is missing: the timer store is off or unused)")
    return directory


def timer_units(directory: Path, records: Records | None = None) -> Iterator[dict | Finding]:
    """Every unit of the timer log in `directory` (see timer_log_dir) in log order (JSON objects), each
    with the record it points at when `records` is given, and a Finding where a segment holds something
    that is neither a unit, a blank nor the zeros after the last unit. The caller opens the store and
    closes `records` after."""
    segments = list_segments(directory)
    for n, seg in enumerate(segments):
        with open_read_only(seg.path) as buf:
            units = timerlog.decode_units(buf)
            for i in range(len(units)):
                u = units[i]
                pos = i * timerlog.UNIT_LEN
                size, magic = int(u["size"]), int(u["magic"])
                if magic == timerlog.BLANK_MAGIC and size == seg.size - pos:
                    break
                if size == 0 and not any(bytes(buf[pos:])):
                    if n + 1 < len(segments):
                        yield Finding(str(seg.path), seg.start + pos, "timer log segment ends in zeros "
                                      "without a blank while later segments exist", seg.size - pos,
                                      ERROR, structure=STRUCTURE, kind="unclosed-segment")
                    break
                if size != timerlog.UNIT_LEN or not timerlog.magic_ok(magic):
                    yield Finding(str(seg.path), seg.start + pos, f"not a timer log unit (size {size}, magic "
                                  f"{magic})", seg.size - pos, ERROR, structure=STRUCTURE, kind="bad-unit")
                    break
                yield _unit_json(seg.start + pos, u, records)
            del units


def _unit_json(offset: int, u, records: Records | None) -> dict:
    write_time, delay = int(u["writeTime"]), int(u["delayMs"])
    doc = {"offset": offset, "prevPos": int(u["prevPos"]), "magic": int(u["magic"]),
           "flags": timerlog.flags(int(u["magic"])), "writeTime": write_time, "delayMs": delay,
           "deliverTime": write_time + delay, "commitLogOffset": int(u["commitLogOffset"]),
           "commitLogSize": int(u["commitLogSize"]), "topicHash": int(u["topicHash"])}
    if records is not None:
        doc["target"] = _target(records, doc["commitLogOffset"], doc["commitLogSize"])
    return doc


def _target(records: Records, offset: int, size: int) -> dict:
    """The record a unit points at: its msgId, topic and the topic it will be delivered to."""
    try:
        rec = records.record(offset)
    except RmqError as e:
        return {"error": str(e)}
    props = properties.parse_java(rec.properties_string)
    out = {"msgId": rec.msg_id, "topic": rec.topic,
           "realTopic": props.get(properties.REAL_TOPIC), "uniqKey": props.get(properties.UNIQ_KEY),
           "storeTimestamp": rec.store_timestamp}
    if rec.store_size != size:
        out["error"] = f"the unit says {size} bytes, the record has {rec.store_size}"
    return out

