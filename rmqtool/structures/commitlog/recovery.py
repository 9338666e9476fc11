"""The commitlog's recovery rules (the broker's CommitLog.recoverNormally / recoverAbnormally).

The walk starts at the third-last segment after a clean shutdown, after a crash at the newest segment
whose first record was stored before the checkpoint's time minus 3 s; records are accepted as
checkMessageAndReturnSize accepts them and the log ends at the first one that is not. Past that end
later segments go and the tail of the last one is cut; `--truncate-to` ends it at a record boundary
before. A missing middle segment is refused, or with --thorough written back as one blank marker.

`reader` is the store being read: `config`, `segments`, `segment_for(offset)`, `scan(...)`,
`sequence_findings()` and `paths`.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np

from rmqtool.files.paths import temporary_name
from rmqtool.files.segments import SegmentFile, nonzero_end, open_read_only
from rmqtool.report import Finding
from rmqtool.structures.commitlog import message, msgid
from rmqtool.structures.commitlog.geometry import size_refusal_line
from rmqtool.structures.commitlog.walker import Rows, walk_on
from rmqtool.structures.cuts import cut
from rmqtool.structures.recoveryplan import RecoveryContext, RecoveryPlan, plan_unfinished
from rmqtool.structures.view import StoreView

RECOVER_FROM_LAST = 3  # clean recovery starts at the third-last segment
MAX_LISTED_MESSAGES = 10_000
SEGMENT_PAST_END = "segment after the end of the recovered log"
_WALK_WINDOW = 64 << 20


def _unmap(buf, start: int, end: int) -> None:
    start -= start % mmap.PAGESIZE
    if hasattr(buf, "madvise") and end > start:
        buf.madvise(mmap.MADV_DONTNEED, start, end - start)


def plan_load(reader: StoreView, plan: RecoveryPlan, refusals: list[Finding]) -> None:
    """A segment the broker refuses to load (its size) refuses the plan; files a killed writer left go."""
    cfg = reader.config
    for f in refusals:
        plan.refused = size_refusal_line(f.file, Path(f.file).stat().st_size, cfg.mappedFileSizeCommitLog, cfg.given)
    plan_unfinished(plan, reader.paths.commitlog)


def plan_end(reader: StoreView, plan: RecoveryPlan, context: RecoveryContext) -> None:
    """Where the log ends after recovery: where the broker's walk ends, or `--truncate-to` (nothing: no log)."""
    if not reader.segments:
        return
    plan_walk(reader, plan, context.recover_before, context.thorough)
    if context.truncate_to is not None:
        plan_truncation(reader, plan, context.truncate_to)


def plan_cut(reader: StoreView, plan: RecoveryPlan, context: RecoveryContext) -> None:
    """The log past the recovery point goes; the messages queued there whose records no longer parse are the
    torn ones."""
    queued = context.queued_past if context.queued_past is not None else np.zeros(0, dtype=np.int64)
    plan.torn_messages = len(queued) - plan_log_cuts(reader, plan, queued)


def record_start(seg: SegmentFile, recover_before: int) -> bool:
    """isMappedFileMatchedRecover: the segment's first record was stored by `recover_before` (the checkpoint's)."""
    with open_read_only(seg.path) as buf:
        found = message.decode(buf, 0, verify_crc=False)  # a file too short for a record decodes as Corrupt
        if not isinstance(found, message.Message) or found.magic != message.MAGIC_V1 or found.store_timestamp == 0:
            return False
        return found.store_timestamp <= recover_before


def plan_walk(reader: StoreView, plan: RecoveryPlan, recover_before: int, thorough: bool) -> None:
    """Where the log's recovery starts (the third-last segment after a clean shutdown, after a crash the
    newest whose first record was stored by the checkpoint's `recover_before`, every segment with --thorough)
    and where the broker's walk from there ends: the recovery point, the last intact record's store time, why
    it stopped."""
    cfg, segments = reader.config, reader.segments
    if thorough:
        k = 0  # beyond the broker: every segment is checked
    elif plan.mode == "clean":
        k = max(len(segments) - RECOVER_FROM_LAST, 0)
    else:
        k = next((i for i in range(len(segments) - 1, -1, -1) if record_start(segments[i], recover_before)), 0)
    plan.start_segment, plan.start_offset = segments[k].path.name, segments[k].start
    end = segments[k].start
    rows = Rows.room(_WALK_WINDOW)  # the broker's walk keeps no rows; the walker writes them anyway
    last_ts = -1
    while True:
        seg = segments[k]
        with open_read_only(seg.path) as buf:
            arr = np.frombuffer(buf, dtype=np.uint8) if len(buf) else np.zeros(0, dtype=np.uint8)
            pos = 0 if seg.start != end else end - seg.start
            for step in walk_on(arr, pos, None, seg.start, rows, broker=True, check_crc=cfg.checkCRCOnRecover,
                                window=_WALK_WINDOW):
                ts = step.last_store_timestamp
                last_ts = int(ts) if ts >= 0 else last_ts
                if step.window_end:
                    _unmap(buf, step.start, step.stop)  # a window at a time, unmapped once read: memory stays bounded
            del arr
        end = seg.start + step.stop
        if step.blank and k + 1 < len(segments):
            k += 1
            end = segments[k].start
            continue
        plan.stop_reason = step.reason
        break
    plan.end, plan.end_segment, plan.end_segment_start = end, seg.path.name, seg.start
    plan.last_store_timestamp = last_ts if last_ts >= 0 else None


def plan_truncation(reader: StoreView, plan: RecoveryPlan, offset: int) -> None:
    """End the log at `offset`: a record boundary at or before where the walk ended (refused, naming the
    nearest boundaries, when it is not one)."""
    first = reader.segments[0].start
    if offset > plan.end or offset < first:
        plan.refused = (f"--truncate-to {offset} is outside the log: it starts at {first} and recovery ends it at "
                        f"{plan.end}; nothing to cut")
        return
    seg = reader.segment_for(offset)
    before, after, last_ts = boundaries_around(reader, seg, offset)
    if before != offset:
        plan.refused = (f"--truncate-to {offset} is not a record boundary: the nearest are {before} and {after} "
                        f"(`rmqtool inspect {reader.paths.root} --phy-offset {before}` shows the record there)")
        return
    plan.truncate_to = offset
    plan.end, plan.end_segment, plan.end_segment_start = offset, seg.path.name, seg.start
    plan.last_store_timestamp = last_ts
    plan.stop_reason = f"--truncate-to {offset}"


def boundaries_around(reader: StoreView, seg: SegmentFile, offset: int) -> tuple[int, int, int | None]:
    """The record boundaries of `seg` nearest to `offset`: (the last at or before it, the first after it,
    the store time of the record ending at the first one). A boundary is a record's start, the segment's
    start, or where its last record ends."""
    before, after, before_ts = seg.start, seg.start + seg.size, None
    for chunk in reader.scan(seg.start, verify_crc=False, until=seg.start + seg.size):
        b = chunk.batch
        if b is None or not len(b):
            continue
        starts = b.offsets.astype(np.int64)
        ends = starts + b.cols["totalSize"].astype(np.int64)
        stamps = b.cols["storeTimestamp"]
        at_or_before = np.flatnonzero(ends <= offset)
        if len(at_or_before):
            i = int(at_or_before[-1])
            before, before_ts = int(ends[i]), int(stamps[i])
        past = np.flatnonzero(starts > offset)
        if len(past):
            after = int(starts[past[0]])
            break
        if int(ends[-1]) > offset:
            after = int(ends[-1])
            break
    return before, after, before_ts


def plan_holes(reader: StoreView, plan: RecoveryPlan, thorough: bool) -> None:
    """Missing middle segments. The broker loads such a store (its recovery steps from the segment
    before the hole to the one after it) and keeps the consume-queue entries that point into the
    hole, which then serve nothing. rmqtool does not write a store with a hole: it refuses, and
    --thorough fills each hole with a segment holding one blank marker (readers step over it, as
    over the end of any segment) and rebuilds queues and index from the log."""
    holes = [f for f in reader.sequence_findings() if f.kind == "missing-segment"]
    if not holes:
        return
    names = ", ".join(Path(f.file).name for f in holes)
    if not thorough:
        plan.refused = (f"commitlog segment {names} is missing: a broker would load this store and keep the "
                        "consume-queue entries that point into the hole; run `rmqtool recover --thorough` to fill the "
                        "hole with a blank segment (its messages stay lost) and rebuild the queues and index")
        return
    plan.filled = [f.file for f in holes]


def fill_holes(filled: list[str], segment_size: int) -> None:
    """Write each missing segment back as one blank marker spanning it (sparse: zeros after it)."""
    for file in filled:
        path = Path(file)
        tmp = path.with_name(temporary_name(path.name))
        with open(tmp, "wb") as f:
            f.write(message.encode_blank(segment_size))
            f.truncate(segment_size)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


def filled(path: Path) -> bool:
    """Whether the segment at `path` begins with an end marker, as `fill_holes` writes a missing one back: it
    holds no record (a broker ends a segment before its first record only for a record larger than a segment)."""
    with open(path, "rb") as f:
        head = f.read(message.BLANK_MARKER_LEN)
    return len(head) == message.BLANK_MARKER_LEN and message.PREFIX.unpack(head)[1] == message.BLANK_MAGIC


def plan_log_cuts(reader: StoreView, plan: RecoveryPlan, queued: np.ndarray) -> int:
    """The commitlog past the recovery point: later segments go (the broker deletes files past the end
    and keeps, emptied, the one starting at it), the tail of the segment holding the end is cut; the
    records there are lost, and so is every other byte of data there (`plan.bytes_lost`). Returns how
    many of the `queued` offsets (sorted, distinct) hold a record that still parses."""
    end = plan.end
    intact = 0
    tails: dict[SegmentFile, list[int]] = {}  # segment -> [from, end of its data] within it, past the point
    for seg in reader.segments:
        if seg.start + seg.size <= end:
            plan.data_end = max(plan.data_end, seg.start + seg.size)
            continue
        start = max(end - seg.start, 0)
        tails[seg] = [start, nonzero_end(seg.path, start)]
    plan.data_end = max([plan.data_end] + [seg.start + t[1] for seg, t in tails.items()])
    if plan.data_end > end:
        record_ends, intact = plan_dropped(reader, plan, queued)
        for seg, t in tails.items():  # a record may end in zero bytes: it still counts whole
            t[1] = max(t[1], record_ends.get(str(seg.path), 0))
        plan.data_end = max([plan.data_end] + [seg.start + t[1] for seg, t in tails.items()])
    for seg, (start, stop) in tails.items():
        if seg.start > end:
            plan.deleted.append((str(seg.path), SEGMENT_PAST_END))
            plan.bytes_lost += stop
            continue
        blank_only = plan.stop_reason == "blank marker" and stop <= message.reach(start)
        if stop > start and not blank_only:
            plan.cuts.append(cut(seg.path, start, stop, f"commitlog ends here ({plan.stop_reason})"))
            plan.bytes_lost += stop - start
    return intact


def plan_dropped(reader: StoreView, plan: RecoveryPlan, queued: np.ndarray) -> tuple[dict[str, int], int]:
    """Count (and list, up to MAX_LISTED_MESSAGES) the records past the recovery point and their bytes, and
    those whose body CRC holds; returns the end of the last of them within each segment file, and how many
    of them sit at one of the `queued` offsets."""
    ends: dict[str, int] = {}
    intact = 0
    for chunk in reader.scan(plan.end, verify_crc=False):
        b = chunk.batch
        if b is None or not len(b):
            continue
        sizes = b.cols["totalSize"].astype(np.int64)
        plan.dropped_count += len(b)
        plan.dropped_bytes += int(sizes.sum())
        crc_ok = b.body_crcs() == b.cols["bodyCRC"]
        plan.intact_count += int(crc_ok.sum())
        plan.intact_bytes += int(sizes[crc_ok].sum())
        if len(queued):
            intact += int(np.isin(b.offsets, queued, assume_unique=True).sum())
        ends[b.file] = max(ends.get(b.file, 0), int((b.pos + sizes).max()))
        room = MAX_LISTED_MESSAGES - len(plan.dropped_messages)
        if room > 0:
            offsets, topics = b.offsets[:room].tolist(), b.topic_names()[:room]
            for i, (off, topic) in enumerate(zip(offsets, topics, strict=False)):
                m = b.message(i)
                plan.dropped_messages.append({"commitLogOffset": off, "msgId": msgid.create(m.store_host, off),
                                              "topic": topic, "queueId": m.queue_id})
    return ends, intact
