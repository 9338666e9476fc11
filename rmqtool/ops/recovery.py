"""What the broker's start-up recovery does to a store, computed before a byte changes.

The plan follows DefaultMessageStore.recover: consume queues first (each keeps its entries
up to the first invalid one, scanning from its third-last file); then the commitlog, from
the third-last segment after a clean shutdown, or after a crash (`abort` present) from the
newest segment whose first record was stored before the checkpoint's time minus 3 s;
records are accepted as CommitLog.checkMessageAndReturnSize accepts them and the log ends at
the first one that is not. Everything past that end goes: later segments, the tail of the
last one, and consume-queue entries pointing at or past it. After a crash, index files newer
than the checkpoint's index time are dropped, and the records from the recovery start are
dispatched again into consume queues and the index. `apply` then does exactly that.

The broker only moves its in-memory write positions over a cut tail and overwrites it
later; rmqtool also zeroes those bytes, so the files on disk say where the store ends. Every byte
it zeroes and every file it removes is kept first under `<store>/lost/<UTC time>/` with the plan
(files/lost.py), and `recover_store` holds the store lock from the plan to the end of the re-dispatch.

The plan also says what the recovery costs, for the summary a person reads first: the
recovery point (the end of the last intact record and that record's store time), the records
past it and their bytes, the torn or garbage bytes around them, the queue entries and index
entries dropped and what the re-dispatch adds back, and the files removed.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rmqtool.engine import journal
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.opening import Store, open_store
from rmqtool.engine.reader import StoreReader
from rmqtool.errors import Interrupted, RmqError
from rmqtool.files.lock import StoreLock, create_abort, fsync_path
from rmqtool.files.paths import StorePaths, is_temporary, temporary_name
from rmqtool.files.segments import SegmentFile, list_segments, nonzero_end, open_read_only, zero_range
from rmqtool.report import Finding
from rmqtool.structures import checkpoint, consumequeue, index, structure
from rmqtool.structures.commitlog import message, msgid

RECOVER_FROM_LAST = 3  # clean recovery starts at the third-last file
MAX_LISTED_MESSAGES = 10_000


SEGMENT_PAST_END = "segment after the end of the recovered log"
QUEUE_FILE_PAST_END = "consume-queue file past the recovered end"
INDEX_NEWER = "index file newer than the checkpoint's index time"
INDEX_PAST_END = "index file holding keys of records past the new end"
UNFINISHED = "unfinished file creation (the writer stopped while allocating it)"

CUT = "cut"  # the finding kind of bytes recovery zeroes: a commitlog tail, consume-queue entries past the end


def cut(file: Path, start: int, end: int, reason: str) -> Finding:
    """A cut of bytes [start, end) of `file` (a commitlog segment or consume-queue file, named by the
    offset of its first byte) as a finding: its offset is the physical / logical one."""
    return Finding(str(file), int(file.name) + start, reason, end - start, kind=CUT)


def cut_range(f: Finding) -> tuple[int, int]:
    """[start, end) of a cut within its file."""
    start = f.offset - int(Path(f.file).name)
    return start, start + f.bytes


def cut_to_json(f: Finding) -> dict:
    start, end = cut_range(f)
    return {"file": f.file, "from": start, "to": end, "bytes": f.bytes, "reason": f.reason}


@dataclass
class QueuePlan:
    topic: str
    queue_id: int
    files: list[Path]
    end: int  # logical byte end of the valid entries
    max_physical_end: int
    dropped: int = 0
    added: int = 0


@dataclass
class RecoveryPlan:
    mode: str  # "clean" or "crash"
    start_segment: str = ""
    start_offset: int = 0
    end: int = 0  # where the commitlog ends after recovery: the recovery point
    end_segment: str = ""  # the segment holding the recovery point
    end_segment_start: int = 0
    last_store_timestamp: int | None = None  # of the last intact record (None: no record was walked)
    stop_reason: str = ""
    data_end: int = 0  # where data ended before recovery
    cuts: list[Finding] = field(default_factory=list)
    deleted: list[tuple[str, str]] = field(default_factory=list)
    dropped_messages: list[dict] = field(default_factory=list)
    dropped_count: int = 0  # records past the recovery point that still parse (CRC-broken ones too)
    dropped_bytes: int = 0  # totalSize of the dropped records
    torn_messages: int = 0  # queued messages past the point whose record no longer parses
    bytes_lost: int = 0  # every byte past the recovery point that held data: records, torn and garbage bytes
    intact_count: int = 0  # dropped records whose body CRC holds (`rmqtool salvage` exports them, recovery cuts them)
    intact_bytes: int = 0  # their totalSize
    queues: list[QueuePlan] = field(default_factory=list)
    index_dropped: list[str] = field(default_factory=list)
    index_keys_added: int = 0
    index_keys_before: int = 0  # entries in the index files recovery keeps
    index_entries_dropped: int = 0  # entries in the index files recovery drops
    thorough: bool = False
    refused: str | None = None
    filled: list[str] = field(default_factory=list)  # missing segments written back as one blank marker
    truncate_to: int | None = None  # the end an operator asked for (`--truncate-to`), not the walk's
    index_from: int | None = None  # truncation: where the re-dispatch re-builds the dropped index files from

    @property
    def dispatch_from(self) -> int | None:
        """Where the re-dispatch after the cuts starts: the recovery start after a crash or with
        --thorough, the first dropped index file's first record after a truncation; None: where the
        queues end (the broker's reput)."""
        starts = [self.start_offset] if self.mode == "crash" or self.thorough else []
        starts += [self.index_from] if self.index_from is not None else []
        return min(starts) if starts else None

    @property
    def changes(self) -> bool:
        return bool(self.cuts or self.deleted or self.filled or self.index_dropped or self.index_keys_added
                    or any(q.dropped or q.added for q in self.queues) or self.mode == "crash")

    @property
    def torn_bytes(self) -> int:
        """Bytes lost that belong to no intact record: a torn record, garbage, end-of-segment markers."""
        return self.bytes_lost - self.dropped_bytes

    def kept_index(self, paths: list[Path]) -> list[Path]:
        """The index files of `paths` this plan keeps."""
        dropped = set(self.index_dropped)
        return [p for p in paths if str(p) not in dropped]

    @property
    def salvageable(self) -> int:
        """Intact records the walk's stop at a damaged one cuts off (none when the operator chose the end)."""
        return 0 if self.truncate_to is not None or self.refused else self.intact_count

    @property
    def salvageable_bytes(self) -> int:
        return self.intact_bytes if self.salvageable else 0

    @property
    def messages_lost(self) -> int:
        """Records past the recovery point that still parse, and torn ones a consume queue had taken."""
        return self.dropped_count + self.torn_messages

    @property
    def queue_entries_dropped(self) -> int:
        return sum(q.dropped for q in self.queues)

    @property
    def queue_entries_added(self) -> int:
        return sum(q.added for q in self.queues)

    def removed_by_structure(self) -> dict[str, int]:
        """Files removed per structure (commitlog, consumequeue, index, ...)."""
        from rmqtool.ops.clean import group_files

        out: dict[str, int] = {}
        for g in group_files(self.deleted):
            out[g.structure] = out.get(g.structure, 0) + len(g.files)
        return out

    def cut_groups(self) -> list[dict]:
        """The cuts as one group per structure and reason: files, bytes, first and last file."""
        from rmqtool.ops.clean import FileSize, group_files

        sizes = {c.file: FileSize(c.bytes) for c in self.cuts}  # one cut per file: where its data ends
        groups = group_files(((c.file, c.reason) for c in self.cuts), sizes)
        return [{**g.to_json(sizes=False), "bytes": g.bytes} for g in groups]

    def summary(self) -> dict:
        """The answers at a glance: the recovery point, what is lost, dropped, re-added and removed."""
        from rmqtool.ops.clean import group_files

        return {
            "recoveryPoint": None if self.refused or not self.end_segment else {
                "offset": self.end, "segment": self.end_segment, "position": self.end - self.end_segment_start,
                "lastStoreTimestamp": self.last_store_timestamp},
            "messagesLost": self.messages_lost,
            "tornMessages": self.torn_messages,
            "bytesLost": self.bytes_lost,
            "messageBytesLost": self.dropped_bytes,
            "tornBytes": self.torn_bytes,
            "queueEntriesDropped": self.queue_entries_dropped,
            "queueEntriesAdded": self.queue_entries_added,
            "queuesChanged": sum(1 for q in self.queues if q.dropped or q.added),
            "indexEntriesDropped": self.index_entries_dropped,
            "indexFilesDropped": len(self.index_dropped),
            "indexKeysAdded": self.index_keys_added,
            "indexKeysFewer": max(self.index_entries_dropped - self.index_keys_added, 0),
            "filesRemoved": len(self.deleted),
            "filesRemovedByStructure": self.removed_by_structure(),
            "segmentsFilled": len(self.filled),
            "deletedGroups": [g.to_json(sizes=False) for g in group_files(self.deleted)],
            "cutGroups": self.cut_groups(),
        }

    def to_json(self) -> dict:
        return {
            **self.summary(),
            "mode": self.mode,
            "thorough": self.thorough,
            "refused": self.refused,
            "truncateTo": self.truncate_to,
            "commitlog": {"startSegment": self.start_segment, "startOffset": self.start_offset, "end": self.end,
                          "dataEnd": self.data_end, "stop": self.stop_reason},
            "filledSegments": self.filled,
            "truncated": [cut_to_json(c) for c in self.cuts],
            "deletedFiles": [{"file": f, "reason": r} for f, r in self.deleted],
            "droppedMessages": self.dropped_messages,
            "droppedMessageCount": self.dropped_count,
            "consumeQueues": [{"topic": q.topic, "queueId": q.queue_id, "entriesDropped": q.dropped,
                               "entriesAdded": q.added} for q in self.queues if q.dropped or q.added],
            "index": {"filesDropped": self.index_dropped, "keysAdded": self.index_keys_added},
        }


_WALK_WINDOW = 64 << 20


def _unmap(buf, start: int, end: int) -> None:
    start -= start % mmap.PAGESIZE
    if hasattr(buf, "madvise") and end > start:
        buf.madvise(mmap.MADV_DONTNEED, start, end - start)


def _queue_plans(reader: StoreReader, cfg: StoreConfig, plan: RecoveryPlan) -> None:
    """Each queue's valid end; a queue file the consume-queue rules find in error refuses the plan."""
    from rmqtool.structures.consumequeue import rules

    queues = structure("consumequeue")
    file_size = cfg.mappedFileSizeConsumeQueue
    for topic in reader.topics():
        for qid in reader.queue_ids(topic):
            directory = reader.paths.queue_dir(topic, qid)
            bad = next(iter(queues.refusals(rules.file_findings(directory, file_size))), None)
            if bad is not None:
                plan.refused = f"{bad.file}: {bad.reason}" + (" (pass the store's broker.conf with --config)" if
                                                             bad.kind in rules.GEOMETRY_KINDS else "")
            files = [s.path for s in list_segments(directory)]
            if not files:
                continue
            first = max(len(files) - RECOVER_FROM_LAST, 0)
            end = int(files[first].name)
            max_end = 0
            for f in files[first:]:
                with open_read_only(f) as buf:
                    entries = consumequeue.decode_entries(buf)
                    n = consumequeue.written_count(entries)
                    if n:
                        max_end = int(entries["commitLogOffset"][n - 1]) + int(entries["size"][n - 1])
                    del entries
                end = int(f.name) + consumequeue.byte_of(n)
                if consumequeue.byte_of(n) < file_size:
                    break
            plan.queues.append(QueuePlan(topic, qid, files, end, max_end))


def _record_start(seg: SegmentFile, cp: checkpoint.Checkpoint, index_safe: bool) -> bool:
    """isMappedFileMatchedRecover: the segment's first record was stored before the checkpoint's time."""
    with open_read_only(seg.path) as buf:
        found = message.decode(buf, 0, verify_crc=False)  # a file too short for a record decodes as Corrupt
        if not isinstance(found, message.Message) or found.magic != message.MAGIC_V1 or found.store_timestamp == 0:
            return False
        return found.store_timestamp <= cp.min_timestamp(index_safe)


def plan_recovery(root: str | os.PathLike | Store, cfg: StoreConfig | None = None, *, count_dispatch: bool = True,
                  thorough: bool = False, truncate_to: int | None = None) -> RecoveryPlan:
    """What recovery would do to the store at `root`, nothing changed.

    `count_dispatch` simulates the re-dispatch to count the queue entries and index keys it
    adds (a dry run needs that; `apply_recovery` counts them from the result instead).
    `truncate_to` ends the log at that record boundary instead of where the walk ends (refused
    when it is not one, or lies past that end): queues, index and checkpoint are then what the
    broker's recovery leaves for a log that ends there.
    """
    from rmqtool.structures.commitlog.walker import Rows, walk_on

    store = root if isinstance(root, Store) else open_store(root, cfg)
    store.require_writable("recover")
    reader = StoreReader(store)
    cfg = reader.config
    paths = reader.paths
    plan = RecoveryPlan("crash" if paths.abort.exists() else "clean")
    segments = reader.segments
    log = structure("commitlog")
    for f in log.refusals(log.file_findings(reader)):
        plan.refused = (f"{f.file}: {f.reason} (mappedFileSizeCommitLog={cfg.mappedFileSizeCommitLog}): the broker "
                        "refuses to start (pass the store's broker.conf with --config)")
    _queue_plans(reader, cfg, plan)
    for directory in (paths.commitlog, paths.consumequeue, paths.index):
        if directory.is_dir():
            plan.deleted += [(str(p), UNFINISHED)
                             for p in sorted(directory.rglob(temporary_name("*"))) if is_temporary(p.name)]
    _plan_holes(reader, plan, thorough)
    if plan.refused or not segments:
        return plan
    cp = reader.checkpoint() if paths.checkpoint.exists() else checkpoint.Checkpoint()
    index_safe = cfg.messageIndexEnable and cfg.messageIndexSafe
    if thorough:
        k = 0  # beyond the broker: every segment is checked
    elif plan.mode == "clean":
        k = max(len(segments) - RECOVER_FROM_LAST, 0)
    else:
        k = next((i for i in range(len(segments) - 1, -1, -1)
                  if _record_start(segments[i], cp, index_safe)), 0)
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
    if truncate_to is not None:
        _plan_truncation(reader, plan, truncate_to)
        if plan.refused:
            return plan
    _plan_cuts(reader, cfg, plan)
    if plan.mode == "crash":
        _plan_index(reader, cfg, cp, plan)
    if truncate_to is not None:
        _plan_index_past(reader, plan)
    plan.index_keys_before = sum(_index_entries(p) for p in plan.kept_index(reader.index_paths()))
    if thorough:
        _plan_rebuilds(reader, plan)
    if count_dispatch:
        _plan_dispatch(reader, cfg, plan)
    return plan


def _plan_truncation(reader: StoreReader, plan: RecoveryPlan, offset: int) -> None:
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


def boundaries_around(reader: StoreReader, seg: SegmentFile, offset: int) -> tuple[int, int, int | None]:
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


def _plan_index_past(reader: StoreReader, plan: RecoveryPlan) -> None:
    """Truncation: index files holding keys of records at or past the new end go whole (a key cannot be
    taken out of a hash chain), and the re-dispatch puts back the keys of their records before the end."""
    dropped = set(plan.index_dropped)
    for path in reader.index_paths():
        head = index.read_header(path)
        if head is None or int(head["endPhyOffset"]) < plan.end or str(path) in dropped:
            continue
        plan.index_dropped.append(str(path))
        plan.index_entries_dropped += _index_entries(path)
        plan.deleted.append((str(path), INDEX_PAST_END))
        begin = int(head["beginPhyOffset"])
        plan.index_from = begin if plan.index_from is None else min(plan.index_from, begin)


def _plan_holes(reader: StoreReader, plan: RecoveryPlan, thorough: bool) -> None:
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


def _fill_holes(plan: RecoveryPlan, segment_size: int) -> None:
    """Write each missing segment back as one blank marker spanning it (sparse: zeros after it)."""
    for file in plan.filled:
        path = Path(file)
        tmp = path.with_name(temporary_name(path.name))
        with open(tmp, "wb") as f:
            f.write(message.encode_blank(segment_size))
            f.truncate(segment_size)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


def _plan_rebuilds(reader: StoreReader, plan: RecoveryPlan) -> None:
    """--thorough: queues missing entries, and an index missing keys, are rebuilt from the log."""
    from rmqtool.ops.verify import verify_store

    plan.thorough = True
    report = verify_store(reader)
    queue_dirs = {str(reader.paths.queue_dir(q.topic, q.queue_id)): q for q in plan.queues}
    broken_queues = {f.file for f in report.findings if f.file in queue_dirs and f.severity == "error"}
    for d in sorted(broken_queues):
        q = queue_dirs[d]
        for f in q.files:
            if (str(f), QUEUE_FILE_PAST_END) not in plan.deleted:
                plan.deleted.append((str(f), "rebuilt from the commitlog (entries missing or wrong)"))
        q.dropped, q.end, q.max_physical_end, q.files = consumequeue.queue_offset_of(q.end), 0, 0, []
        plan.cuts = [c for c in plan.cuts if not c.file.startswith(d + os.sep)]
    index_dir = str(reader.paths.index)
    if any(f.file.startswith(index_dir) and f.severity == "error" for f in report.findings):
        for path in plan.kept_index(reader.index_paths()):
            plan.index_dropped.append(str(path))
            plan.index_entries_dropped += _index_entries(path)
            plan.deleted.append((str(path), "rebuilt from the commitlog (keys missing or unreachable)"))
        plan.index_keys_before = 0


def _plan_cuts(reader: StoreReader, cfg: StoreConfig, plan: RecoveryPlan) -> None:
    cut_points = {id(q): _queue_cut(q, plan.end) for q in plan.queues}
    queued = _queued_past(cfg, plan, cut_points)
    plan.torn_messages = len(queued) - _plan_log_cuts(reader, plan, queued)
    _plan_queue_cuts(cfg, plan, cut_points)


def _plan_log_cuts(reader: StoreReader, plan: RecoveryPlan, queued: np.ndarray) -> int:
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
        record_ends, intact = _plan_dropped(reader, plan, queued)
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


def _plan_dropped(reader: StoreReader, plan: RecoveryPlan, queued: np.ndarray) -> tuple[dict[str, int], int]:
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


def _queued_past(cfg: StoreConfig, plan: RecoveryPlan, cut_points: dict[int, int]) -> np.ndarray:
    """The commitlog offsets, sorted and distinct, that the consume-queue entries dropped at `cut_points`
    point to past the recovery point: messages a consumer could have been given, lost whether or not
    their records still parse."""
    found = [_entry_offsets(q, cut_points[id(q)], cfg.mappedFileSizeConsumeQueue) for q in plan.queues
             if cut_points[id(q)] < q.end]
    offsets = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    return np.unique(offsets[offsets >= plan.end])


def _plan_queue_cuts(cfg: StoreConfig, plan: RecoveryPlan, cut_points: dict[int, int]) -> None:
    """Consume-queue entries pointing at or past the recovery point: dropped (cut, or their files deleted)."""
    file_size = cfg.mappedFileSizeConsumeQueue
    for q in plan.queues:
        cut_at = cut_points[id(q)]
        q.dropped = consumequeue.whole_entries(q.end - cut_at)
        if q.dropped:
            q.max_physical_end = _entry_end(q, cut_at, file_size)
        for f in q.files:
            start = int(f.name)
            if start >= cut_at:
                plan.deleted.append((str(f), QUEUE_FILE_PAST_END))
            elif cut_at < start + file_size:
                data = _whole_entries(nonzero_end(f, cut_at - start), cut_at - start, file_size)
                if data > cut_at - start:
                    plan.cuts.append(cut(f, cut_at - start, data, "consume-queue entries past the recovered end"))
        q.end = cut_at


def _entry_offsets(q: QueuePlan, start: int, file_size: int) -> np.ndarray:
    """The commitLogOffset of every entry of `q` from logical position `start` to its end."""
    out = []
    for f in q.files:
        lo = int(f.name)
        a, b = max(start, lo), min(q.end, lo + file_size)
        if a < b:
            first, last = consumequeue.whole_entries(a - lo), consumequeue.whole_entries(b - lo)
            with open_read_only(f) as buf:
                entries = consumequeue.decode_entries(buf)[first:last]
                out.append(entries["commitLogOffset"].astype(np.int64))
                del entries
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def _whole_entries(data: int, start: int, file_size: int) -> int:
    """`data` (where a queue file's non-zero bytes end) moved up to the end of its entry: an entry may
    end in zero bytes (a tagsCode of 0), and its cut covers it whole."""
    return min(start + consumequeue.round_up_to_entry(data - start), file_size)


def _entry_end(q: QueuePlan, end: int, file_size: int) -> int:
    """offset + size of the entry just before logical position `end` (0 when there is none)."""
    for f in q.files:
        before = consumequeue.whole_entries(end - int(f.name))  # entries of f before `end`
        if 0 < before <= consumequeue.whole_entries(file_size):
            with open_read_only(f) as buf:
                offset, size, _tags = consumequeue.entry_at(buf, before - 1)
                return offset + size
    return 0


def _queue_cut(q: QueuePlan, log_end: int) -> int:
    """The queue's end after dropping entries that point at or past the commitlog end."""
    cut = q.end
    for f in reversed(q.files):
        start = int(f.name)
        if start >= q.end:
            continue
        with open_read_only(f) as buf:
            entries = consumequeue.decode_entries(buf)
            n = min(consumequeue.whole_entries(q.end - start), len(entries))
            offs = entries["commitLogOffset"][:n]
            past = np.flatnonzero(offs >= log_end)
            del entries
        if len(past) == 0:
            return cut
        cut = start + consumequeue.byte_of(int(past[0]))
        if past[0] > 0:
            return cut
    return cut


def _plan_index(reader: StoreReader, cfg: StoreConfig, cp: checkpoint.Checkpoint, plan: RecoveryPlan) -> None:
    for path in reader.index_paths():
        head = index.read_header(path)
        end_ts = int(head["endTimestamp"]) if head is not None else 0
        if end_ts > cp.indexMsgTimestamp:
            plan.index_dropped.append(str(path))
            plan.index_entries_dropped += _index_entries(path)
            plan.deleted.append((str(path), INDEX_NEWER))


def _index_entries(path: Path) -> int:
    """Entries an index file holds (its header's indexCount, less the unused entry 0)."""
    head = index.read_header(path)
    count = int(head["indexCount"]) if head is not None else 1
    return max(count - index.FIRST_INDEX, 0)


def _plan_dispatch(reader: StoreReader, cfg: StoreConfig, plan: RecoveryPlan) -> None:
    """Count the queue entries and index keys the re-dispatch after recovery adds."""
    from rmqtool.structures.commitlog.dispatchkernel import dispatch_records

    queue_end = {(q.topic, q.queue_id): q for q in plan.queues}
    reput = max([q.max_physical_end for q in plan.queues] + [0])
    start = plan.dispatch_from if plan.dispatch_from is not None else reput
    start = max(start, reader.segments[0].start)
    index_from = _kept_index_end(reader, plan)
    levels = np.asarray(cfg.delay_levels_ms, dtype=np.int64)
    for chunk in reader.scan(start, verify_crc=False):
        b = chunk.batch
        if b is None or not len(b):
            continue
        offsets = b.offsets
        keep = offsets < plan.end
        if not keep.any():
            break
        found = dispatch_records(np.frombuffer(b.buf, dtype=np.uint8), b.geometry()[keep], b.base, levels)
        names = [t for t, k in zip(b.topic_names(), keep.tolist(), strict=True) if k]
        ends = found.offset + found.size
        for i in np.flatnonzero(found.in_cq).tolist():
            q = queue_end.get((names[i], int(found.queue_id[i])))
            if q is None:
                q = QueuePlan(names[i], int(found.queue_id[i]), [], 0, 0)
                queue_end[(q.topic, q.queue_id)] = q
                plan.queues.append(q)
            if ends[i] > q.max_physical_end:
                q.added += 1
                q.max_physical_end = int(ends[i])
        if cfg.messageIndexEnable:
            key_offsets = found.key_offsets
            plan.index_keys_added += int((key_offsets >= index_from).sum())


def _kept_index_end(reader: StoreReader, plan: RecoveryPlan) -> int:
    kept = plan.kept_index(reader.index_paths())
    if not kept:
        return 0
    head = index.read_header(kept[-1])
    return int(head["endPhyOffset"]) if head is not None else 0


def recover_store(root: str | os.PathLike | Store, cfg: StoreConfig | None = None, *,
                  thorough: bool = False, truncate_to: int | None = None) -> tuple[RecoveryPlan, Path | None]:
    """Plan and apply recovery under one hold of the store lock, from before the plan to the end of the
    re-dispatch: no writer can come in between what the plan saw and what recovery cuts (the store is
    resolved again once the lock is held). Returns the plan and the lost/ folder that keeps what was
    cut (None: nothing was). A refused plan changes nothing: not even a `lock` file is left behind."""
    first = root if isinstance(root, Store) else open_store(root, cfg)
    first.require_writable("recover")  # before the lock file is created or touched
    journal.finish_deletions(first.paths)  # a clean killed mid-way: its removals finished first
    if journal.pending(first.paths) is not None:  # a write killed mid-way: rolled back (and said) first
        from rmqtool.engine.message_store import MessageStore

        MessageStore(first, create=False).close()
        first = open_store(first.root, first.config)
    had_lock_file = first.paths.lock.exists()
    lock = StoreLock(first.paths)
    try:
        from rmqtool.files.swap import finish_swap

        finish_swap(first.paths)  # a rebuild killed while it swapped its folders in: its new folders first
        store = open_store(first.root, first.config, kind=first.kind)
        plan = plan_recovery(store, count_dispatch=False, thorough=thorough, truncate_to=truncate_to)
        if plan.refused:
            if not had_lock_file:
                first.paths.lock.unlink(missing_ok=True)
            return plan, None
        return plan, apply_recovery(store, None, plan, lock=lock)
    finally:
        lock.release()


def lost_dir_of(paths: StorePaths, plan: RecoveryPlan) -> Path | None:
    """The lost/ folder recovery by `plan` would fill if it started now; None when it cuts and removes nothing."""
    from rmqtool.files.lost import next_lost_dir

    if not (plan.cuts or plan.deleted):
        return None
    return next_lost_dir(paths)


def apply_recovery(root: str | os.PathLike | Store, cfg: StoreConfig | None, plan: RecoveryPlan, *,
                   lock: StoreLock | None = None) -> Path | None:
    """Do what `plan` says: keep what it cuts and removes under lost/, cut, remove, re-dispatch, then
    close the store cleanly. The store lock (`lock`, taken before the plan by `recover_store`, or taken
    here) is held to the end of the re-dispatch and released with the store. Returns the lost/ folder
    (None when nothing was cut or removed)."""
    from rmqtool.engine.message_store import MessageStore

    if plan.refused:
        raise RmqError(f"recovery refused: {plan.refused}")
    store = root if isinstance(root, Store) else open_store(root, cfg)
    if lock is None:
        store.require_writable("recover")
        lock = StoreLock(store.paths)
    try:
        create_abort(store.paths.abort)  # until the re-dispatch is done no writer takes the store
        lost = _keep_and_cut(store.paths, plan)
        _fill_holes(plan, store.config.mappedFileSizeCommitLog)
        if plan.truncate_to is not None:
            _lower_checkpoint(store.paths, plan, lost)
        recovered = MessageStore(store, recovering=True, lock=lock,  # the files as cut
                                 dispatch_from=plan.dispatch_from)
    except KeyboardInterrupt:
        lock.release()
        raise _unfinished(store, "its cuts") from None
    except BaseException:
        lock.release()
        raise
    try:
        _count_added(recovered, plan)
    except KeyboardInterrupt:
        raise _unfinished(store, "the re-dispatch of queues and index") from None
    finally:
        recovered.close()  # releases the lock
    return lost


def _unfinished(store: Store, step: str) -> Interrupted:
    return Interrupted(f"recovery stopped during {step}: {store.root} keeps `abort` (no writer takes it); run "
                       f"`rmqtool recover {store.root}` again to finish, from where the store is now")


def _keep_and_cut(paths: StorePaths, plan: RecoveryPlan) -> Path | None:
    """Every range `plan` cuts is copied to lost/ and made durable before any is zeroed; every file it
    removes is moved there. Returns the lost/ folder, None when there was nothing to keep."""
    from rmqtool.files.lost import Lost

    removed = [Path(f) for f in dict.fromkeys(f for f, _ in plan.deleted) if os.path.lexists(f)]
    if not (plan.cuts or removed):
        return None
    lost = Lost(paths, plan.to_json())
    ranges = [(c.file, *cut_range(c)) for c in plan.cuts]
    for file, start, end in ranges:
        lost.keep_range(file, start, end)
    for file, start, end in ranges:
        zero_range(file, start, end)
    for file in removed:
        lost.keep_file(file)
    return lost.directory


def _lower_checkpoint(paths: StorePaths, plan: RecoveryPlan, lost: Path | None) -> None:
    """Truncation: no checkpoint time may name data past the new end (the index time of a dropped index
    file would keep a later crash recovery from rebuilding its successor), so each is lowered to the last
    kept record's store time; the old checkpoint is kept in lost/ beside what was cut."""
    from rmqtool.structures.checkpoint.file import CheckpointFile

    if not paths.checkpoint.is_file():
        return
    if lost is not None:
        (lost / paths.checkpoint.name).write_bytes(paths.checkpoint.read_bytes())
        fsync_path(lost / paths.checkpoint.name)
    cp = CheckpointFile(paths.checkpoint)
    ceiling = plan.last_store_timestamp or 0
    cp.physic, cp.logics, cp.index = min(cp.physic, ceiling), min(cp.logics, ceiling), min(cp.index, ceiling)
    cp.flush()


def _count_added(store, plan: RecoveryPlan) -> None:
    """Queue entries and index keys the re-dispatch added, read from the recovered store."""
    by_key = {(q.topic, q.queue_id): q for q in plan.queues}
    for (topic, qid), cq in store.queues.items():
        q = by_key.get((topic, qid))
        if q is None:
            q = QueuePlan(topic, qid, [], 0, 0)
            plan.queues.append(q)
        q.added = max(q.added, cq.max_offset_in_queue - consumequeue.queue_offset_of(q.end))
    if store.index is not None:
        store.dispatch()
        now = sum(int(f.header["indexCount"]) - index.FIRST_INDEX for f in store.index.files)
        plan.index_keys_added = now - plan.index_keys_before
