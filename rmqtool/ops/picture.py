"""The picture: one JSON-able document of a store that the report page is drawn from, made of the same
numbers `info`, `consumers` and `verify` print (the same functions), read without a log scan unless `verify`.

Keys: generatedMs, rmqtoolVersion, info (`info --json`, with its timeline), timeline (the same object), queues,
segments, consumers (`consumers --json` with each queue's committedStoreMs, or None without committed offsets),
index (per file: header counts and the slot-chain length histogram), findings (None unless verified).
Memory: one queue's entries and one index file at a time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from rmqtool import __version__
from rmqtool.engine.reader import StoreReader, open_root_reader
from rmqtool.ops.consumers import consumer_lag, progress_doc
from rmqtool.ops.doctor import remedy_line
from rmqtool.ops.info import info_doc
from rmqtool.ops.verify import verify_store
from rmqtool.structures.consumequeue.queues import MapCache
from rmqtool.structures.consumequeue.timeline import store_times
from rmqtool.structures.registry import COMMITLOG

Progress = Callable[[str, int | None], None]  # (stage finished, items in it): info, consumers, index, verify
STAGES = ("info", "consumers", "index", "verify")


def store_picture(path: str | os.PathLike, config: str | os.PathLike | None = None, *, verify: bool = False,
                  buckets: int | None = None, progress: Progress | None = None) -> dict:
    """The picture of the store at `path`; `verify` adds a full check (a log scan: wrap the call in
    `engine.reader.scan_observed` to hear how far it has got); `buckets`: the timeline's at most."""

    tell = progress or (lambda stage, n: None)
    reader = open_root_reader(path, config)
    try:
        queues: list[dict] = []
        info = info_doc(reader, buckets=buckets, queue_rows=queues)
        tell("info", len(queues))
        consumers = _consumers(reader)
        tell("consumers", None if consumers is None else len(consumers["groups"]))
        index = _index(reader)
        tell("index", len(index))
        findings = None
        report = None
        if verify:
            report, findings = _verified(reader)
            tell("verify", findings["problems"])
        return {"generatedMs": int(time.time() * 1000), "rmqtoolVersion": __version__, "info": info,
                "timeline": info["timeline"], "queues": queues, "segments": _segments(reader, info, report),
                "consumers": consumers, "index": index, "findings": findings}
    finally:
        reader.queues.close()


def _segments(reader: StoreReader, info: dict, report) -> list[dict]:
    """Each commitlog segment (a missing one too, as one hole), its bytes of records and the damage found."""
    log = info["commitlog"]
    end = log.get("endOffset", 0)
    size = reader.segment_size
    rows = [{"name": seg.path.name, "start": seg.start, "size": max(seg.size, size), "used":
             min(max(end - seg.start, 0), max(seg.size, size)),
             "holes": [[seg.start + seg.size, seg.start + size]] if seg.size < size and seg.start + size <= end
             else []} for seg in reader.segments]
    for hole in log["holes"]:
        for name in hole["missing"]:
            rows.append({"name": name, "start": int(name), "size": size, "used": 0,
                         "holes": [[int(name), int(name) + size]]})
    rows.sort(key=lambda r: r["start"])
    for row in rows:
        row["damaged"] = []
    if report is not None:

        for f in report.findings:
            if f.structure != COMMITLOG.name:
                continue
            row = next((r for r in rows if r["start"] <= f.offset < r["start"] + r["size"]), None)
            if row is not None:
                row["damaged"].append([f.offset, f.offset + max(f.bytes, 1), f.kind])
    return rows


def _consumers(reader: StoreReader) -> dict | None:
    """`consumers --json`, each queue with the store time of the message at its committed offset."""
    import numpy as np


    groups = consumer_lag(reader)
    if not groups:
        return None
    doc = progress_doc(reader, groups)
    wanted: dict[tuple[str, int], list[dict]] = {}
    for g in doc["groups"]:
        for q in g["queues"]:
            q["committedStoreMs"] = None
            at, low, high = q["committedOffset"], q["minOffset"], q["maxOffset"]
            if at is not None and low is not None and low <= at < high:
                wanted.setdefault((q["topic"], q["queueId"]), []).append(q)
    maps = MapCache()
    try:
        for (topic, qid), rows in wanted.items():
            physical = reader.queues.commit_log_offsets(topic, qid, np.asarray([q["committedOffset"] for q in rows],
                                                                               dtype=np.int64))
            times = store_times(reader, maps, physical)
            for q, off, ms in zip(rows, physical.tolist(), times.tolist(), strict=True):
                q["committedStoreMs"] = ms if off >= 0 and ms >= 0 else None
    finally:
        maps.close()
    return doc


def _index(reader: StoreReader) -> list[dict]:
    """Each index file: its header's counts and times, and how many slots have a chain of each length."""
    out = []
    files = reader.index_files() if reader.index_paths() else None
    for p in reader.index_paths():
        view = files.index_file(p)
        out.append({"file": p.name, "indexCount": view.held, "maxIndexNum": view.index_num,
                    "hashSlotNum": view.hash_slots, "beginTimestamp": view.header["beginTimestamp"],
                    "endTimestamp": view.header["endTimestamp"], "chainLengths": view.chain_lengths()})
        del view
    return out


def _verified(reader: StoreReader):
    """`verify`'s report of the store, summed up per kind and structure, with the doctor's one line."""

    report = verify_store(reader)
    summary: dict[tuple[str, str], dict] = {}
    for f in report.findings:
        row = summary.setdefault((f.kind, f.structure), {"kind": f.kind, "structure": f.structure, "count": 0,
                                                         "firstOffset": f.offset})
        row["count"] += f.count
        row["firstOffset"] = min(row["firstOffset"], f.offset)
    line = remedy_line(report, reader, "verify found") or \
        f"verify found {report.problems} problems, {report.warnings} warnings"
    rows = sorted(summary.values(), key=lambda r: (r["structure"], r["kind"]))
    return report, {"problems": report.problems, "summary": rows, "doctor": line}
