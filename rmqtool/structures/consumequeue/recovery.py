"""The consume queues' recovery rules (the broker's ConsumeQueue.recover and truncateDirtyLogicFiles).

Each queue keeps its entries up to the first one not written, reading from its third-last file; then
the entries pointing at or past the recovered end of the log go (the files wholly past it are removed,
the file holding the cut is zeroed from there). A queue file the broker cannot load refuses the plan.
--thorough rebuilds from the log a queue the check found in error, or one with a file cut short. After
the cuts, the re-dispatch adds the records past a queue's last entry.

`reader` is the store being read: `config`, `topics()`, `queue_ids(topic)` and `paths`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rmqtool.files.segments import list_segments, nonzero_end, open_read_only
from rmqtool.report import Finding
from rmqtool.structures import consumequeue
from rmqtool.structures.consumequeue import rules
from rmqtool.structures.cuts import cut
from rmqtool.structures.recoveryplan import QueuePlan, RecoveryContext, RecoveryPlan, plan_unfinished
from rmqtool.structures.view import RecoveredStore, StoreView

if TYPE_CHECKING:  # start-up: numba loads only when a dry run counts the re-dispatch
    from rmqtool.structures.consumequeue.dispatchkernel import Dispatched

RECOVER_FROM_LAST = 3  # the broker's queue recovery starts at the third-last file
QUEUE_FILE_PAST_END = "consume-queue file past the recovered end"
REBUILT = "rebuilt from the commitlog (entries missing or wrong)"


def plan_load(reader: StoreView, plan: RecoveryPlan, refused_at_start: tuple[str, ...], thorough: bool) -> None:
    """Each queue's end (the broker recovers queues first); a queue file it cannot load refuses the plan, and
    files a killed writer left go."""
    plan.queues, refused = queue_plans(reader, reader.config.mappedFileSizeConsumeQueue, refused_at_start, thorough)
    plan.refused = refused or plan.refused
    plan_unfinished(plan, reader.paths.consumequeue)


def plan_past_end(reader: StoreView, plan: RecoveryPlan, context: RecoveryContext) -> None:
    """Where each queue's entries pointing at or past the log's end begin, and the log offsets they name."""
    for q in plan.queues:
        q.cut_at = queue_cut(q, plan.end)
    context.queued_past = queued_past(plan.queues, plan.end, reader.config.mappedFileSizeConsumeQueue)


def plan_rebuild(reader: StoreView, plan: RecoveryPlan, findings: list[Finding]) -> None:
    """--thorough: a queue the check found in error, or one with a file cut short, is rebuilt from the log:
    its files go (kept in lost/) and the re-dispatch writes it again."""
    queue_dirs = {str(reader.paths.queue_dir(q.topic, q.queue_id)): q for q in plan.queues}
    broken = {f.file for f in findings if f.file in queue_dirs and f.severity == "error"}
    broken |= {d for d, q in queue_dirs.items() if q.cut_short}
    for d in sorted(broken):
        q = queue_dirs[d]
        for f in q.files:
            if (str(f), QUEUE_FILE_PAST_END) not in plan.deleted:
                plan.deleted.append((str(f), REBUILT))
        q.dropped, q.end, q.max_physical_end, q.files = consumequeue.queue_offset_of(q.end), 0, 0, []
        plan.cuts = [c for c in plan.cuts if not c.file.startswith(d + os.sep)]


class QueueCounter:
    """The entries the re-dispatch adds: a record entering a queue past the queue's last entry (a queue the
    plan has none of is added to it)."""

    def __init__(self, plan: RecoveryPlan) -> None:
        self.plan = plan
        self.queues = {(q.topic, q.queue_id): q for q in plan.queues}

    def count(self, found: Dispatched, topics: list[str]) -> None:
        ends = found.offset + found.size
        for i in np.flatnonzero(found.in_cq).tolist():
            key = (topics[i], int(found.queue_id[i]))
            q = self.queues.get(key)
            if q is None:
                q = self.queues[key] = QueuePlan(*key, [], 0, 0)
                self.plan.queues.append(q)
            if ends[i] > q.max_physical_end:
                q.added += 1
                q.max_physical_end = int(ends[i])


def count_redispatched(recovered: RecoveredStore, plan: RecoveryPlan) -> None:
    """The entries the re-dispatch added, read from each queue of the recovered store."""
    by_key = {(q.topic, q.queue_id): q for q in plan.queues}
    for (topic, qid), cq in recovered.queues.items():
        q = by_key.get((topic, qid))
        if q is None:
            q = QueuePlan(topic, qid, [], 0, 0)
            plan.queues.append(q)
        q.added = max(q.added, cq.max_offset_in_queue - consumequeue.queue_offset_of(q.end))


def queue_plans(reader: StoreView, file_size: int, refused_at_start: tuple[str, ...],
                thorough: bool = False) -> tuple[list[QueuePlan], str | None]:
    """Each queue's valid end, and why the plan is refused (None: it is not): the last queue file the
    queue-file rules find in error of a kind in `refused_at_start`. A file cut short, when another queue
    file of the store has the size, is mended by a rebuild of its queue: with `thorough` its queue is
    marked `cut_short` instead of refusing the plan."""
    plans: list[QueuePlan] = []
    bad: list[Finding] = []
    sized = False  # some queue file of the store is of the queue file size: it is the store's
    for topic in reader.topics():
        for qid in reader.queue_ids(topic):
            directory = reader.paths.queue_dir(topic, qid)
            bad += [f for f in rules.file_findings(directory, file_size) if f.kind in refused_at_start][:1]
            segments = list_segments(directory)
            sized = sized or any(s.size == file_size for s in segments)
            files = [s.path for s in segments]
            if files:
                plans.append(_queue_plan(topic, qid, files, file_size))
    short = {f.file for f in bad if sized and _cut_short(f, file_size)}
    for q in plans:
        q.cut_short = thorough and any(str(f) in short for f in q.files)
    left = [f for f in bad if not (thorough and f.file in short)]
    return plans, None if not left else _refusal(left[-1], file_size, left[-1].file in short, reader.paths.root)


def _cut_short(f: Finding, file_size: int) -> bool:
    """Whether the file of a queue-file-size finding is shorter than `file_size`."""
    return f.kind == rules.FILE_SIZE and Path(f.file).is_file() and Path(f.file).stat().st_size < file_size


def _refusal(bad: Finding, file_size: int, short: bool, root: Path) -> str:
    """What the broker refuses to start on, and what mends it: a file cut short (the store's other queue
    files show the size) by a rebuild of its queue; a size that may be the settings' by --config."""
    if short:
        return (f"{bad.file}: cut short: {Path(bad.file).stat().st_size} bytes, the store's queue files are "
                f"{file_size} bytes; the broker refuses to start on it: `rmqtool recover {root} --thorough` rebuilds "
                "its queue from the commitlog (the file is kept in lost/)")
    return f"{bad.file}: {bad.reason}" + (" (pass the store's broker.conf with --config)"
                                         if bad.kind in rules.GEOMETRY_KINDS else "")


def _queue_plan(topic: str, qid: int, files: list[Path], file_size: int) -> QueuePlan:
    """The queue's end by the broker's rule: its entries up to the first not written, from the third-last file."""
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
    return QueuePlan(topic, qid, files, end, max_end)


def queue_cut(q: QueuePlan, log_end: int) -> int:
    """The queue's end after dropping entries that point at or past the commitlog end."""
    cut_at = q.end
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
            return cut_at
        cut_at = start + consumequeue.byte_of(int(past[0]))
        if past[0] > 0:
            return cut_at
    return cut_at


def queued_past(queues: list[QueuePlan], log_end: int, file_size: int) -> np.ndarray:
    """The commitlog offsets, sorted and distinct, that the consume-queue entries dropped at each queue's
    `cut_at` point to past `log_end`: messages a consumer could have been given, lost whether or not their
    records still parse."""
    found = [entry_offsets(q, q.cut_at, file_size) for q in queues if q.cut_at < q.end]
    offsets = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    return np.unique(offsets[offsets >= log_end])


def plan_queue_cuts(plan: RecoveryPlan, file_size: int) -> None:
    """Consume-queue entries pointing at or past the recovery point: dropped (cut, or their files deleted)."""
    for q in plan.queues:
        cut_at = q.cut_at
        q.dropped = consumequeue.whole_entries(q.end - cut_at)
        if q.dropped:
            q.max_physical_end = entry_end(q, cut_at, file_size)
        for f in q.files:
            start = int(f.name)
            if start >= cut_at:
                plan.deleted.append((str(f), QUEUE_FILE_PAST_END))
            elif cut_at < start + file_size:
                data = whole_entries(nonzero_end(f, cut_at - start), cut_at - start, file_size)
                if data > cut_at - start:
                    plan.cuts.append(cut(f, cut_at - start, data, "consume-queue entries past the recovered end"))
        q.end = cut_at


def entry_offsets(q: QueuePlan, start: int, file_size: int) -> np.ndarray:
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


def whole_entries(data: int, start: int, file_size: int) -> int:
    """`data` (where a queue file's non-zero bytes end) moved up to the end of its entry: an entry may
    end in zero bytes (a tagsCode of 0), and its cut covers it whole."""
    return min(start + consumequeue.round_up_to_entry(data - start), file_size)


def entry_end(q: QueuePlan, end: int, file_size: int) -> int:
    """offset + size of the entry just before logical position `end` (0 when there is none)."""
    for f in q.files:
        before = consumequeue.whole_entries(end - int(f.name))  # entries of f before `end`
        if 0 < before <= consumequeue.whole_entries(file_size):
            with open_read_only(f) as buf:
                offset, size, _tags = consumequeue.entry_at(buf, before - 1)
                return offset + size
    return 0
