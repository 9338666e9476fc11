"""The checkpoint as the registry lists it: one page of flush times recovery starts from."""

from __future__ import annotations

from pathlib import Path

from rmqtool.structures.checkpoint.check import CheckpointChecker, check_file
from rmqtool.structures.checkpoint.file import lower_to
from rmqtool.structures.checkpoint.recognize import checkpoint_refusal
from rmqtool.structures.checkpoint.recovery import plan_start
from rmqtool.structures.recoveryplan import START, RecoveryContext, RecoveryPlan
from rmqtool.structures.structure import RESET_CHECKPOINT, LogChecker, Repair, Structure, mend_all
from rmqtool.structures.view import CheckReport, Opener, StoreView

CHECKPOINT_KIND = "checkpoint"
CHECKPOINT_NAME = "checkpoint"  # the file's name under a store root


class CheckpointFile(Structure):
    name = "checkpoint"
    folder = "checkpoint"
    file_kind = CHECKPOINT_KIND

    def recognise(self, head: bytes, size: int) -> str | None:
        return checkpoint_refusal(head)

    def repairs(self, report: CheckReport, view: StoreView) -> list[Repair]:
        """Every finding of its own is mended by one reset-checkpoint."""
        return mend_all(report.findings, self.name, RESET_CHECKPOINT, str(view.paths.checkpoint),
                        "write the checkpoint's times again from the newest record")

    def place(self, path: Path) -> Path | None:
        return path.parent if path.name == CHECKPOINT_NAME else None

    def log_checker(self, view: StoreView, report: CheckReport) -> LogChecker | None:
        return CheckpointChecker(view, report)

    def check_file(self, path: Path, opener: Opener, report: CheckReport) -> None:
        check_file(path, report)

    def info(self, view: StoreView, doc: dict) -> tuple[str, dict] | None:
        """Its times, and how far the physic time lags the log's newest record (`doc`'s commitlog section)."""
        if not view.paths.checkpoint.is_file():
            return "checkpoint", {"present": False}
        cp = view.checkpoint()
        out = {"present": True, **cp.to_json()}
        last_ts = doc.get("commitlog", {}).get("lastStoreTimestamp")
        if last_ts is not None:
            out["physicBehindDataMs"] = last_ts - cp.physicMsgTimestamp  # > 0: records newer than the checkpoint
        return "checkpoint", out

    def plan_recovery(self, phase: str, view: StoreView, plan: RecoveryPlan, context: RecoveryContext) -> None:
        """Start: its times, where a crash recovery starts and which index files it keeps."""
        if phase == START:
            plan_start(view, plan, context)

    def apply_recovery(self, view: StoreView, plan: RecoveryPlan, lost: Path | None) -> None:
        """A truncation lowers its times to the last record kept."""
        if plan.truncate_to is not None:
            lower_to(view.paths.checkpoint, plan.last_store_timestamp or 0, lost)


CHECKPOINT = CheckpointFile()
