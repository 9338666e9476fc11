"""Findings in groups: consecutive findings of one kind on one file (a commitlog segment, a
queue, an index file) make one group, so a hundred dangling entries of one queue are one line."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from rmqtool.format.finding import Finding


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
