"""What every on-disk structure offers the orchestrators (`verify`, `recover`, `doctor`, `info`, `diff`).

A structure is an object with behaviour, as a log segment owns its files and its sanity check: it
recognises its files, places a path in a store, checks its files alone and against the log, plans the
repairs its findings call for, writes its `info` section and compares its files on two replicas. The
orchestrators loop over the registry (`rmqtool.structures.REGISTRY`) and hold no structure's rule. A
subclass imports what a method needs inside the method, so listing the registry loads nothing heavy.

`view` below is the store being read (`engine.reader.StoreReader`); structures take it by what it
offers, never by import, so no structure imports a layer above it. So is `opener`, what `verify FILE`
opens a lone file with: `config` (the store settings, `--config` or the broker's defaults) and
`reader(path)` (a store reader of a store root, or of one commitlog segment, with those settings).
A `report` offers `reporter.add/extend(findings)`, `collected` (a capped sink: `add_each`), `notes`
(lines for a person), the counts `messages`, `queue_entries`, `index_entries`, and `queue_keys`
((topic, queue id) -> the number the log's windows give the queue).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rmqtool.report import Finding
from rmqtool.structures.replicas import Comparison, Pair


class LogChecker(Protocol):
    """A structure's check of its files against the log, fed the log's good records window by window
    in log order (so memory holds a window, not the store)."""

    def check(self, window: Any) -> None: ...

    def finish(self, end: int) -> None: ...


# What a repair does; the doctor carries them out in this order (the log first, what points into it after).
CUT_AND_REPACK = "cut-and-repack"  # cut the log at a damaged record, append the intact records after it again
FINISH_REPAIR = "finish-repair"  # swap in the rest of a repair that was stopped after it committed
RECOVER = "recover"  # the broker's recovery: the log cut where its records end, queues and index cut to it
REBUILD_QUEUES = "rebuild-queues"  # consume queues dispatched again from the log
REBUILD_INDEX = "rebuild-index"  # the index dispatched again from the log
RESET_CHECKPOINT = "reset-checkpoint"  # the checkpoint's times lowered to what the files hold
CANNOT_MEND = "cannot-mend"  # damage no repair in place undoes (the store is left as it is)
ACTIONS = (CANNOT_MEND, FINISH_REPAIR, CUT_AND_REPACK, RECOVER, REBUILD_QUEUES, REBUILD_INDEX, RESET_CHECKPOINT)


@dataclass(frozen=True)
class Repair:
    """One fix a structure plans for some of its findings: what it does, to which file or folder, why,
    and which finding kinds it mends (how many, what it costs, is the doctor's to count)."""

    structure: str
    action: str  # one of ACTIONS
    target: str  # the file or folder it changes
    reason: str  # what it mends, in an operator's words
    kinds: tuple[str, ...] = ()  # the finding kinds it mends
    at: int | None = None  # CUT_AND_REPACK: the commitlog offset of the first damaged record

    @property
    def order(self) -> int:
        return ACTIONS.index(self.action)

    def to_json(self) -> dict:
        return {"structure": self.structure, "action": self.action, "target": self.target, "reason": self.reason,
                "kinds": list(self.kinds), "at": self.at}


def mend_all(findings: Iterable[Finding], structure: str, action: str, target: str, reason: str) -> list[Repair]:
    """One repair of `action` mending every finding of `structure` among `findings` (none when it has none):
    a structure whose files are all rebuilt or rewritten at once."""
    kinds = tuple(sorted({f.kind for f in findings if f.structure == structure}))
    return [Repair(structure, action, target, reason, kinds)] if kinds else []


class Structure:
    """The base every structure's object extends; each method's default is "nothing of this kind"."""

    name: str = ""
    folder: str = ""  # under a store root
    file_kind: str | None = None  # the kind of single file it owns, as an operator names it
    refused_at_start: tuple[str, ...] = ()  # finding kinds the broker will not start with

    def __init__(self, name: str | None = None, folder: str | None = None) -> None:
        """A structure with no behaviour of its own yet is named here; one with behaviour is a subclass."""
        if name is not None:
            self.name = name
        if folder is not None:
            self.folder = folder

    def __repr__(self) -> str:
        return f"<structure {self.name}>"

    def recognise(self, head: bytes, size: int) -> str | None:
        """Why a file whose first bytes are `head` cannot be one of this structure's files (None: it could)."""
        return "no file of its own"

    def place(self, path: Path) -> Path | None:
        """The store root when `path` sits where this structure keeps its files (None elsewhere)."""
        return None

    def file_findings(self, view: Any) -> list[Finding]:
        """What the structure's own rules find in its files, before any is read against another."""
        return []

    def log_checker(self, view: Any, report: Any) -> LogChecker | None:
        """A checker of its files against the log's records (None: it has none)."""
        return None

    def check_file(self, path: Path, opener: Any, report: Any) -> None:
        """One of its files checked alone (`verify FILE`)."""
        raise NotImplementedError(self.name)

    def refusals(self, findings: Iterable[Finding]) -> list[Finding]:
        """The findings among `findings` that make the broker refuse to start."""
        return [f for f in findings if f.structure == self.name and f.kind in self.refused_at_start]

    def repairs(self, report: Any, view: Any) -> list[Repair]:
        """The fixes the findings of a store's check (`report.findings`, every structure's; `report.log_end`
        where the log's good records end) call for in this structure (none: nothing of its own to mend)."""
        return []

    def info(self, view: Any, doc: dict) -> tuple[str, dict] | None:
        """(key, section) of `info` for this structure (None: the store has none of its files)."""
        return None

    # -- two replicas (`diff`) ------------------------------------------------------------------------
    def pair_refusal(self, a: Any, b: Any) -> str | None:
        """Why stores `a` and `b` cannot be compared as replicas by this structure's files (None: they can)."""
        return None

    def compare(self, pair: Pair) -> Comparison | None:
        """Its files on both sides of `pair` compared (None: nothing of its own to compare)."""
        return None
