"""What every on-disk structure offers the orchestrators (`verify`, `recover`, `doctor`, `info`, `diff`).

A structure is an object with behaviour, as a log segment owns its files and its sanity check: it
recognises its files, places a path in a store, checks its files alone and against the log, plans
the repairs its findings call for, plans its part of recovery, writes its `info` section, says which
files of a store are its own (`owns`, for `info`'s disk use) and compares its files on two replicas.
The orchestrators loop over the registry
(`rmqtool.structures.registry.REGISTRY`) and hold no structure's rule. A subclass imports what a
method needs inside the method, so listing the registry loads nothing heavy.

`view` below is the store being read, `report` a check's report and `opener` what `verify FILE` opens
a lone file with: each typed by the Protocol of what the structures read of it (`structures.view`), which
the engine's reader and verify's report satisfy, so no structure imports a layer above it. A log checker
is fed the log's records as `Window`s (`commitlog.window`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rmqtool.report import Finding
from rmqtool.structures.commitlog.window import Window
from rmqtool.structures.view import CheckReport, Opener, RecoveredStore, StoreView

if TYPE_CHECKING:
    from rmqtool.files.paths import StorePaths
from rmqtool.structures.recoveryplan import RecoveryContext, RecoveryPlan, RedispatchCounter
from rmqtool.structures.replicas import Comparison, Pair


class LogChecker(Protocol):
    """A structure's check of its files against the log, fed the log's good records window by window
    in log order (so memory holds a window, not the store)."""

    def check(self, window: Window) -> None: ...

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


def orphan_reason(min_offset: int) -> str:
    """Why the broker's cleanup deletes a file that points into the log once the log starts at `min_offset`."""
    return f"every entry points below the commitlog minimum {min_offset}"


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

    def owns(self, path: Path, root: Path) -> bool:
        """Whether the file at `path` is one of its files in the store at `root` (what `info`'s disk use counts
        as its): where `place` puts it, unless the structure keeps more (a folder's every file)."""
        return self.place(path) == root

    def keeps_folder(self, folder: Path, root: Path) -> bool:
        """Whether every file under `folder` (a folder at the top of the store at `root`) is one of its files, so
        that `info`'s disk use need not ask `owns` file by file (false: ask each)."""
        return False

    def file_findings(self, view: StoreView) -> list[Finding]:
        """What the structure's own rules find in its files, before any is read against another."""
        return []

    def log_checker(self, view: StoreView, report: CheckReport) -> LogChecker | None:
        """A checker of its files against the log's records (None: it has none)."""
        return None

    def check_file(self, path: Path, opener: Opener, report: CheckReport) -> None:
        """One of its files checked alone (`verify FILE`)."""
        raise NotImplementedError(self.name)

    def refusals(self, findings: Iterable[Finding]) -> list[Finding]:
        """The findings among `findings` that make the broker refuse to start."""
        return [f for f in findings if f.structure == self.name and f.kind in self.refused_at_start]

    def repairs(self, report: CheckReport, view: StoreView) -> list[Repair]:
        """The fixes the findings of a store's check (`report.findings`, every structure's; `report.log_end`
        where the log's good records end) call for in this structure (none: nothing of its own to mend)."""
        return []

    def info(self, view: StoreView, doc: dict) -> tuple[str, dict] | None:
        """(key, section) of `info` for this structure (None: the store has none of its files)."""
        return None

    def orphans(self, paths: StorePaths, min_offset: int) -> list[tuple[str, str]]:
        """(file, reason) of its files the broker's cleanup deletes once the log starts at `min_offset` (none:
        nothing of it points into the log)."""
        return []

    def plan_recovery(self, phase: str, view: StoreView, plan: RecoveryPlan, context: RecoveryContext) -> None:
        """Its part of recovery's `phase` (`recoveryplan.PHASES`, in the broker's order) written into `plan`;
        what a later phase of another structure needs goes into `context`."""

    def redispatch_counter(self, view: StoreView, plan: RecoveryPlan) -> RedispatchCounter | None:
        """A count, into `plan`, of what the re-dispatch after `plan`'s cuts adds to its files (None: nothing)."""
        return None

    def apply_recovery(self, view: StoreView, plan: RecoveryPlan, lost: Path | None) -> None:
        """Its change by `plan` beyond the cuts and removals, made after them and before the re-dispatch; what
        it overwrites is kept in `lost` (None: nothing was cut) first."""

    def count_redispatched(self, recovered: RecoveredStore, plan: RecoveryPlan) -> None:
        """What the re-dispatch added to its files, read into `plan` from `recovered` (the store the re-dispatch
        left open: `engine.message_store.MessageStore`)."""

    # -- two replicas (`diff`) ------------------------------------------------------------------------
    def pair_refusal(self, a: StoreView, b: StoreView) -> str | None:
        """Why stores `a` and `b` cannot be compared as replicas by this structure's files (None: they can)."""
        return None

    def compare(self, pair: Pair) -> Comparison | None:
        """Its files on both sides of `pair` compared (None: nothing of its own to compare)."""
        return None
