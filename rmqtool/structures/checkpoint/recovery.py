"""The checkpoint's part of recovery: its times say where a crash recovery starts (StoreCheckpoint's min
timestamp: physic and logics, and index when the index is safe, less 3 s) and which index files it keeps; a
truncation lowers them to the last record kept (`file.lower_to`).

`view` is the store being read: `config`, `segments`, `paths` and `checkpoint()`.
"""

from __future__ import annotations

from rmqtool.structures.checkpoint import Checkpoint
from rmqtool.structures.recoveryplan import RecoveryContext, RecoveryPlan
from rmqtool.structures.view import StoreView


def plan_start(view: StoreView, plan: RecoveryPlan, context: RecoveryContext) -> None:
    """Its times, for the log's walk and the index's cut (a missing page reads as zeros); not read when the
    plan is refused or the log has no segment (nothing starts from it)."""
    if plan.refused or not view.segments:
        return
    cfg = view.config
    cp = view.checkpoint() if view.paths.checkpoint.exists() else Checkpoint()
    context.recover_before = cp.min_timestamp(cfg.messageIndexEnable and cfg.messageIndexSafe)
    context.index_time = cp.indexMsgTimestamp
