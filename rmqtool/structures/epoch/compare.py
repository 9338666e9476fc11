"""The 5.x controller-mode state of two replicas side by side (`diff`): each side's epochs and HA checkpoint
offsets, and where the broker's own rule says their logs stop agreeing."""

from __future__ import annotations

from rmqtool.structures.epoch import consistent_point
from rmqtool.structures.epoch.state import ha_state
from rmqtool.structures.replicas import Comparison, Pair


def compare(pair: Pair) -> Comparison | None:
    """`epochs`, when both sides keep an epoch file: the consistent point is the newest epoch both hold with
    one start, ended at the earlier of the two ends (-1: no epoch in common). None when either side has no
    epoch file (4.x and 5.x default-mode stores keep none). It tells, it does not decide the pair's equality."""
    sides = pair.sides()
    states = [ha_state(view.paths.root) for _, view, _ in sides]
    if any(st.epochs is None or st.epochs.source is None for st in states):
        return None
    out: dict = {side: {"epochs": [e.to_json() for e in st.epochs.entries], "masterFlushedOffset":
                        st.masterFlushedOffset, "confirmPhyOffset": st.confirmPhyOffset}
                 for (side, _, _), st in zip(sides, states, strict=True)}
    out["consistentPoint"] = consistent_point(states[0].epochs.entries, pair.held_a.end, states[1].epochs.entries,
                                              pair.held_b.end)
    return Comparison({"epochs": out})
