"""The 5.x timer log read unit by unit, each unit with the commitlog record it points at."""

from __future__ import annotations

import os
from collections.abc import Iterator

from rmqtool.errors import RmqError
from rmqtool.files.segments import list_segments, open_read_only
from rmqtool.report import ERROR, Finding
from rmqtool.structures import timerlog
from rmqtool.structures.commitlog import properties

TIMERLOG_DIR = "timerlog"
STRUCTURE = "timerlog"


def timer_units(root: str | os.PathLike, config: str | os.PathLike | None = None,
                resolve: bool = True) -> Iterator[dict | Finding]:
    """Every unit of the store's timer log in log order (JSON objects), and a Finding where a
    segment holds something that is neither a unit, a blank nor the zeros after the last unit."""
    from pathlib import Path

    from rmqtool.engine.reader import open_reader
    from rmqtool.engine.recognition import require_store_root
    from rmqtool.ops.query import StoreQuery

    require_store_root(Path(root), "decode timerlog")
    directory = Path(root) / TIMERLOG_DIR
    if not directory.is_dir():
        raise RmqError(f"{root}: no timer log ({TIMERLOG_DIR}/ is missing: the timer store is off or unused)")
    query = StoreQuery(open_reader(root, config)) if resolve else None
    segments = list_segments(directory)
    try:
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
                    yield _unit_json(seg.start + pos, u, query)
                del units
    finally:
        if query is not None:
            query.close()


def _unit_json(offset: int, u, query) -> dict:
    write_time, delay = int(u["writeTime"]), int(u["delayMs"])
    doc = {"offset": offset, "prevPos": int(u["prevPos"]), "magic": int(u["magic"]),
           "flags": timerlog.flags(int(u["magic"])), "writeTime": write_time, "delayMs": delay,
           "deliverTime": write_time + delay, "commitLogOffset": int(u["commitLogOffset"]),
           "commitLogSize": int(u["commitLogSize"]), "topicHash": int(u["topicHash"])}
    if query is not None:
        doc["target"] = _target(query, doc["commitLogOffset"], doc["commitLogSize"])
    return doc


def _target(query, offset: int, size: int) -> dict:
    """The record a unit points at: its msgId, topic and the topic it will be delivered to."""
    try:
        rec = query.record(offset)
    except RmqError as e:
        return {"error": str(e)}
    props = properties.parse_java(rec.properties_string)
    out = {"msgId": rec.msg_id, "topic": rec.topic,
           "realTopic": props.get(properties.REAL_TOPIC), "uniqKey": props.get(properties.UNIQ_KEY),
           "storeTimestamp": rec.store_timestamp}
    if rec.store_size != size:
        out["error"] = f"the unit says {size} bytes, the record has {rec.store_size}"
    return out

