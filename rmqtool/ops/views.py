"""What the decode and inspect commands show, computed from a StoreReader."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rmqtool.engine.reader import StoreReader
from rmqtool.engine.recognition import require_file
from rmqtool.errors import NotFound, RmqError
from rmqtool.files.segments import SegmentFile, open_read_only, single_segment
from rmqtool.report import COMMITLOG, WARNING, Finding
from rmqtool.structures import consumequeue, index
from rmqtool.structures.commitlog import compression, message
from rmqtool.structures.commitlog.template import FieldSpan, record_template
from rmqtool.structures.consumequeue.queues import queue_file_entries
from rmqtool.structures.index import chain as index_chain


def decode_log(reader: StoreReader, *, from_offset: int = 0, count: int | None = None, topic: str | None = None,
               verify_crc: bool = True, check_bodies: bool = True) -> Iterator[message.DecodedMessage | Finding]:
    """Messages (and findings, in offset order) from `from_offset` on; `count` limits messages.

    With `check_bodies`, a compressed body that does not decompress is a warning before its message.
    """
    levels = reader.config.delay_levels_ms
    left = count
    if from_offset == 0:
        yield from reader.sequence_findings()
    for chunk in reader.scan(from_offset, verify_crc=verify_crc):
        messages: Iterator[tuple[int, message.DecodedMessage]] = iter(())
        if chunk.batch is not None and len(chunk.batch):
            batch = chunk.batch
            picks = np.arange(len(batch))
            if topic is not None:
                ids, names = batch.topics()
                wanted = [i for i, name in enumerate(names) if name == topic]
                picks = picks[np.isin(ids, wanted)]
            if left is not None:
                picks = picks[:left]
                left -= len(picks)
            offsets = batch.offsets
            messages = ((int(offsets[i]), item) for i in picks.tolist()
                        for item in _decoded(batch.file, batch.message(i), levels, check_bodies))
        findings = ((f.offset, f) for f in chunk.findings)
        for _, item in heapq.merge(messages, findings, key=lambda pair: pair[0]):
            yield item
        if left is not None and left <= 0:
            return


def _decoded(file: str, msg: message.Message, levels: list[int],
             check_body: bool) -> Iterator[message.DecodedMessage | Finding]:
    """The record, after a warning when its compressed body does not decompress (`check_body`)."""
    decoded = message.DecodedMessage(msg, consumequeue.record_tags_code(msg, levels))
    error = decoded.plain().error if check_body and decoded.codec is not None else None
    if error is not None:
        yield Finding(file, msg.physical_offset, error, msg.store_size, WARNING, structure=COMMITLOG,
                      kind=compression.NOT_DECOMPRESSIBLE)
    yield decoded


def queue_entries(reader: StoreReader | None, topic: str | None, queue_id: int | None,
                  file: Path | None = None) -> Iterator[dict]:
    """Consume-queue entries of topic/queue (or of one queue file) as decode JSON objects."""

    if file is not None:
        require_file(file, "consume-queue file")
        parts: Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = iter(
            [(*queue_file_entries(single_segment(file)), None)])
    else:
        if reader is None or topic is None or queue_id is None:
            raise RmqError("give --topic and --queue (or the path of one consume-queue file)")
        parts = reader.queues.read_rows(topic, queue_id)
    for offsets, entries, times in parts:
        cols = [offsets.tolist(), entries["commitLogOffset"].tolist(), entries["size"].tolist(),
                entries["tagsCode"].tolist()]
        if times is None:
            for qo, off, size, tags in zip(*cols, strict=True):
                yield {"queueOffset": qo, "commitLogOffset": off, "size": size, "tagsCode": tags}
        else:
            for qo, off, size, tags, ts in zip(*cols, times.tolist(), strict=True):
                yield {"queueOffset": qo, "commitLogOffset": off, "size": size, "tagsCode": tags,
                       "storeTimestamp": ts}


def index_report(reader: StoreReader, path: Path, with_entries: bool = True) -> dict:
    """Header, slot fill statistics and entries of one index file."""
    view = reader.index_file(path)
    slots = view.slots()
    used = slots[slots > index.INVALID_INDEX]
    entries = view.entries()
    chain = index_chain.lengths(view.buf, view.hash_slots, index_chain.entry_bound(view.header["indexCount"],
                                view.index_num), view.header["beginTimestamp"])
    report = {
        "file": str(path),
        "name": path.name,
        "header": view.header,
        "slots": {
            "hashSlotNum": view.hash_slots,
            "indexNum": view.index_num,
            "used": int(used.size),
            "fill": round(used.size / view.hash_slots, 4) if view.hash_slots else 0.0,
            "entries": len(entries),
            "longestChain": int(chain.max()) if chain.size else 0,
            "meanChain": round(float(chain.mean()), 3) if chain.size else 0.0,
        },
    }
    if with_entries:
        report["entries"] = view.entry_rows()
    return report


def index_targets(reader: StoreReader, path: Path | None) -> list[Path]:
    if path is not None and path.is_file():
        return [path]
    found = reader.index_paths()
    if not found:
        raise RmqError(f"{reader.paths.root}: no index files")
    return found


@dataclass
class Inspection:
    offset: int
    segment: SegmentFile
    spans: list[FieldSpan]
    problem: str | None
    raw: bytes
    codec: str | None = None  # a compressed body's codec
    plain: compression.Decompressed | None = None  # that body as a consumer gets it (or why it is not)


def inspect_record(reader: StoreReader, offset: int) -> Inspection:
    """The record at `offset` laid out field by field with raw bytes."""
    seg = reader.segment_for(offset)
    if seg is None:
        raise NotFound(reader.describe_absence(offset))
    with open_read_only(seg.path) as buf:
        pos = offset - seg.start
        spans, problem = record_template(buf, pos)
        length = spans[-1].start + spans[-1].length if spans else 0
        raw = bytes(buf[pos : pos + length])
    found = {s.name: s.value for s in spans}
    flags, body = found.get("sysFlag", 0), found.get("body")
    codec = compression.codec_of(flags) if isinstance(body, bytes) else None
    plain = compression.plain_body(body, flags) if codec is not None else None
    return Inspection(offset, seg, spans, problem, raw, codec, plain)
