"""Where findings go: sinks that keep them, group them, or count them.

Consecutive findings of one kind on one file (a commitlog segment, a queue, an index file)
make one group: a hundred dangling entries of one queue are one line, not a hundred.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from rmqtool.format.finding import ERROR, Finding


@dataclass
class FindingGroup:
    """A run of findings with the same structure, file, kind and severity."""

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
        return cls(f.structure, f.file, f.kind, f.severity, f.offset, f.offset, 1, f.bytes, f.reason)

    def takes(self, f: Finding) -> bool:
        return (f.structure, f.file, f.kind, f.severity) == (self.structure, self.file, self.kind, self.severity)

    def add(self, f: Finding) -> None:
        self.first_offset = min(self.first_offset, f.offset)
        self.last_offset = max(self.last_offset, f.offset)
        self.count += 1
        self.bytes += f.bytes

    def to_json(self) -> dict:
        return {"structure": self.structure, "file": self.file, "kind": self.kind, "severity": self.severity,
                "firstOffset": self.first_offset, "lastOffset": self.last_offset, "count": self.count,
                "bytes": self.bytes, "reason": self.reason}


class FindingSink(Protocol):
    def add(self, finding: Finding) -> None: ...


@dataclass
class CollectSink:
    """Keeps every finding, in arrival order."""

    findings: list[Finding] = field(default_factory=list)

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)


@dataclass
class GroupSink:
    """Keeps only the groups: memory grows with the number of runs, not of findings."""

    groups: list[FindingGroup] = field(default_factory=list)

    def add(self, finding: Finding) -> None:
        if self.groups and self.groups[-1].takes(finding):
            self.groups[-1].add(finding)
        else:
            self.groups.append(FindingGroup.of(finding))


@dataclass
class CountSink:
    """Counts findings by severity and by kind."""

    by_severity: Counter = field(default_factory=Counter)
    by_kind: Counter = field(default_factory=Counter)

    def add(self, finding: Finding) -> None:
        self.by_severity[finding.severity] += 1
        self.by_kind[finding.kind] += 1

    @property
    def errors(self) -> int:
        return self.by_severity[ERROR]


def group_findings(findings: Iterable[Finding]) -> list[FindingGroup]:
    """The runs of `findings` (consecutive, same structure, file, kind and severity), in order."""
    sink = GroupSink()
    for f in findings:
        sink.add(f)
    return sink.groups
