"""What recovery will do to a store, as data: the plan each structure writes its part of, phase by phase
(`Structure.plan_recovery`), that `recover --dry-run` shows, `ops.recovery` carries out and lost/plan.json
keeps; and what the structures hand each other between phases (`RecoveryContext`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rmqtool.files.groups import FileSize, group_files
from rmqtool.files.paths import is_temporary, temporary_name
from rmqtool.report import Finding
from rmqtool.structures.cuts import cut_range

if TYPE_CHECKING:  # start-up: a query lists the registry and loads no numpy
    import numpy as np

    from rmqtool.structures.consumequeue.dispatchkernel import Dispatched

# The broker's recovery in its order; every structure is asked for its part of each, in registry order.
LOAD = "load"  # what the broker refuses to load, each queue's end (queues are recovered first), unfinished files
START = "start"  # where the log's walk starts: missing segments, the checkpoint's times
END = "end"  # the commitlog walk finds the end (or --truncate-to sets it)
PAST_END = "past-end"  # what points past the end: the queue entries (the log's cut counts the torn among them)
CUT = "cut"  # what lies past the end goes; after a crash, the index newer than the checkpoint
REBUILD = "rebuild"  # --thorough: what the check found broken is rebuilt from the log
PHASES = (LOAD, START, END, PAST_END, CUT, REBUILD)

UNFINISHED = "unfinished file creation (the writer stopped while allocating it)"


@dataclass
class QueuePlan:
    """One consume queue's piece of the plan."""

    topic: str
    queue_id: int
    files: list[Path]
    end: int  # logical byte end of the valid entries
    max_physical_end: int
    dropped: int = 0
    added: int = 0
    cut_short: bool = False  # a file of it is shorter than the store's queue files: rebuilt from the log
    cut_at: int = 0  # PAST_END: the logical byte where its entries pointing past the log's end begin


@dataclass
class RecoveryContext:
    """What a plan is asked for, and what one structure finds for another's later phase (not shown)."""

    thorough: bool = False
    truncate_to: int | None = None
    recover_before: int = 0  # START: a crash recovery walks from the newest segment whose first record is older
    index_time: int = 0  # START: the checkpoint's index time (index files newer go after a crash)
    queued_past: np.ndarray | None = None  # PAST_END: log offsets past the end that dropped queue entries name
    findings: list[Finding] = field(default_factory=list)  # REBUILD: what the check of the store found


class RedispatchCounter(Protocol):
    """A structure's count of what the re-dispatch adds, fed the records it would dispatch, in log order."""

    def count(self, found: Dispatched, topics: list[str]) -> None: ...


def plan_unfinished(plan: RecoveryPlan, directory: Path) -> None:
    """Files a killed writer left half-created in `directory` (a temporary name) go."""
    if directory.is_dir():
        plan.deleted += [(str(p), UNFINISHED) for p in sorted(directory.rglob(temporary_name("*")))
                         if is_temporary(p.name)]


def cut_to_json(f: Finding) -> dict:
    start, end = cut_range(f)
    return {"file": f.file, "from": start, "to": end, "bytes": f.bytes, "reason": f.reason}


@dataclass
class RecoveryPlan:
    """The whole store's plan: the log's end and cuts, the queues' pieces, the index files dropped, the files
    removed, and what the re-dispatch adds back."""

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
    def redispatch_start(self) -> int:
        """Where the re-dispatch reads the log from: `dispatch_from`, else where the queues end."""
        if self.dispatch_from is not None:
            return self.dispatch_from
        return max([q.max_physical_end for q in self.queues] + [0])

    @property
    def changes(self) -> bool:
        return bool(self.cuts or self.deleted or self.filled or self.index_dropped or self.index_keys_added
                    or any(q.dropped or q.added for q in self.queues) or self.mode == "crash")

    @property
    def torn_bytes(self) -> int:
        """Bytes lost that belong to no intact record: a torn record, garbage, end-of-segment markers."""
        return self.bytes_lost - self.dropped_bytes

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
        out: dict[str, int] = {}
        for g in group_files(self.deleted):
            out[g.structure] = out.get(g.structure, 0) + len(g.files)
        return out

    def cut_groups(self) -> list[dict]:
        """The cuts as one group per structure and reason: files, bytes, first and last file."""
        sizes = {c.file: FileSize(c.bytes) for c in self.cuts}  # one cut per file: where its data ends
        groups = group_files(((c.file, c.reason) for c in self.cuts), sizes)
        return [{**g.to_json(sizes=False), "bytes": g.bytes} for g in groups]

    def summary(self) -> dict:
        """The answers at a glance: the recovery point, what is lost, dropped, re-added and removed."""
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
