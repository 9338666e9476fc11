"""Is this file a checkpoint? Its size and its flush times, checked before it is decoded."""

from __future__ import annotations

from rmqtool.structures import checkpoint
from rmqtool.structures.plausible import plausible_time


def checkpoint_refusal(buf: bytes) -> str | None:
    """None when the page holds flush times (epoch ms, or 0 before the first flush)."""
    reason = checkpoint.refusal(buf)
    if reason is not None:
        return reason
    cp = checkpoint.decode(buf)
    times = (cp.physicMsgTimestamp, cp.logicsMsgTimestamp, cp.indexMsgTimestamp)
    if not all(plausible_time(t) for t in times):
        return f"its flush times {times} are not epoch milliseconds"
    return None
