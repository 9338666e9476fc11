"""The one report type: corruption, refusals and cuts, emitted as data instead of raised mid-file,
and findings in groups (consecutive findings of one kind on one file make one group)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol

ERROR = "error"
WARNING = "warning"

UNCLASSIFIED = "unclassified"  # the kind of a finding whose emitter names none

# What a finding is about; the folders of its path name it when the emitter does not.
COMMITLOG, CONSUMEQUEUE, INDEX, CHECKPOINT, STORE = "commitlog", "consumequeue", "index", "checkpoint", "store"


@dataclass(frozen=True)
class Finding:
    """Something wrong at `offset` of `file`, covering `bytes` bytes.

    `structure` is what it is about (commitlog, consumequeue, index, checkpoint, store) and
    `kind` a short stable slug of what is wrong ("crc-mismatch", "missing-segment", ...).
    For a consume queue `file` is the queue's folder and `offset` the entry's logical byte.
    """

    file: str
    offset: int
    reason: str
    bytes: int
    severity: str = ERROR
    structure: str = ""
    kind: str = UNCLASSIFIED
    count: int = 1  # the findings this one stands for: 1, or N for an "N more like" row of a capped list

    def __post_init__(self) -> None:
        if not self.structure:
            object.__setattr__(self, "structure", structure_of(self.file))

    def to_json(self) -> dict:
        doc = asdict(self)
        if self.count == 1:
            del doc["count"]
        return doc


def structure_of(path: str) -> str:
    """The structure a store path belongs to, from the folder names near its end (`store` when none says).

    Consume queues are looked for first: a topic may be named like another structure's folder.
    """
    parts = ["", "", "", "", *path.replace("\\", "/").split("/")]
    if CONSUMEQUEUE in parts[-4:]:
        return CONSUMEQUEUE
    for folder in (COMMITLOG, INDEX):
        if folder in parts[-2:]:
            return folder
    return CHECKPOINT if parts[-1] == CHECKPOINT else STORE

@dataclass
class FindingGroup:
    """A run of findings with the same structure, file, kind and severity. A finding whose emitter
    named no kind is a group of its own: two such findings may be different failures."""

    structure: str
    file: str
    kind: str
    severity: str
    first_offset: int
    last_offset: int
    count: int
    bytes: int
    reason: str  # the first finding's

    @classmethod
    def of(cls, f: Finding) -> FindingGroup:
        return cls(f.structure, f.file, f.kind, f.severity, f.offset, f.offset, f.count, f.bytes, f.reason)

    def takes(self, f: Finding) -> bool:
        return f.kind != UNCLASSIFIED and \
            (f.structure, f.file, f.kind, f.severity) == (self.structure, self.file, self.kind, self.severity)

    def add(self, f: Finding) -> None:
        self.first_offset = min(self.first_offset, f.offset)
        self.last_offset = max(self.last_offset, f.offset)
        self.count += f.count
        self.bytes += f.bytes

    def to_json(self) -> dict:
        return {"structure": self.structure, "file": self.file, "kind": self.kind, "severity": self.severity,
                "firstOffset": self.first_offset, "lastOffset": self.last_offset, "count": self.count,
                "bytes": self.bytes, "reason": self.reason}


@dataclass
class GroupSink:
    """Keeps only the groups: memory grows with the number of runs, not of findings."""

    groups: list[FindingGroup] = field(default_factory=list)

    def add(self, finding: Finding) -> None:
        if self.groups and self.groups[-1].takes(finding):
            self.groups[-1].add(finding)
        else:
            self.groups.append(FindingGroup.of(finding))


def group_findings(findings: Iterable[Finding]) -> list[FindingGroup]:
    """The runs of `findings` (consecutive, same structure, file, kind and severity), in order."""
    sink = GroupSink()
    for f in findings:
        sink.add(f)
    return sink.groups


class Sink(Protocol):
    """Where a Reporter hands each finding."""

    def add(self, finding: Finding) -> None: ...


@dataclass
class CollectSink:
    """Keeps findings, at most `cap` of one kind per file (None: all); the others are counted, and
    `close` adds one "N more like" finding per (file, kind) that stands for them (its `count` is N, its
    offset the last listed one's, its bytes theirs), so a count over the list is a count of everything."""

    cap: int | None = None
    findings: list[Finding] = field(default_factory=list)
    unlisted: Counter[tuple[str, str]] = field(default_factory=Counter)  # (kind, severity) not kept
    _seen: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)
    _first: dict[tuple[str, str], Finding] = field(default_factory=dict, repr=False)
    _last: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)  # the last listed one's offset
    _more_bytes: Counter[tuple[str, str]] = field(default_factory=Counter, repr=False)

    def add(self, finding: Finding) -> None:
        key = (finding.file, finding.kind)
        n = self._seen.get(key, 0)
        self._seen[key] = n + 1
        if self.cap is None or n < self.cap:
            self._first.setdefault(key, finding)
            self._last[key] = finding.offset
            self.findings.append(finding)
        else:
            self.unlisted[(finding.kind, finding.severity)] += 1
            self._more_bytes[key] += finding.bytes

    def add_each(self, file: str, kind: str, rows: Sequence[int], make: Callable[[int], Finding]) -> None:
        """`make(row)` for each of `rows` as far as the cap for (file, kind) allows; the rest are counted
        without being made (a findings list never grows with the store)."""
        key = (file, kind)
        room = len(rows) if self.cap is None else max(self.cap - self._seen.get(key, 0), 0)
        for row in list(rows[:room]):
            self.add(make(int(row)))
        rest = len(rows) - min(room, len(rows))
        if rest:
            first = self._first[key]
            self._seen[key] += rest
            self.unlisted[(first.kind, first.severity)] += rest
            self._more_bytes[key] += rest * first.bytes  # the findings of one kind on one file are alike in size

    def close(self) -> None:
        """One "N more like" finding per (file, kind) past the cap, standing for all N."""
        for key, n in self._seen.items():
            if self.cap is not None and n > self.cap:
                first, more = self._first[key], n - self.cap
                self.findings.append(Finding(first.file, self._last[key], f"{more} more like: {first.reason}",
                                             self._more_bytes[key], first.severity, first.structure, first.kind,
                                             more))
                self.unlisted[(first.kind, first.severity)] -= more


@dataclass
class CountSink:
    """Counts findings per (kind, severity) and keeps none."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, finding: Finding) -> None:
        self.counts[(finding.kind, finding.severity)] += 1


@dataclass
class PrintSink:
    """Hands each finding to `write` as it comes (a line on a terminal, a JSON line)."""

    write: Callable[[Finding], None]

    def add(self, finding: Finding) -> None:
        self.write(finding)


class Reporter:
    """Hands every finding to each of its sinks, as LevelDB's log reader hands dropped bytes to its
    Reporter: the code that finds damage says what it found and nothing about where it goes."""

    def __init__(self, *sinks: Sink) -> None:
        self.sinks = sinks

    def add(self, finding: Finding) -> None:
        for sink in self.sinks:
            sink.add(finding)

    def extend(self, findings: Iterable[Finding]) -> None:
        for finding in findings:
            self.add(finding)
