"""5.x controller mode: the epoch file and brokerIdentity as the registry lists it."""

from __future__ import annotations

from typing import Any

from rmqtool.structures.structure import Structure


class EpochFile(Structure):
    name = "epoch"
    folder = "epochFileCheckpoint"

    def info(self, view: Any, doc: dict) -> tuple[str, dict] | None:
        """The 5.x replication state (epochs, broker identity, the checkpoint's 5.x longs); None without any."""
        from rmqtool.structures.epoch.state import ha_state

        state = ha_state(view.paths.root)
        return ("ha", state.summary()) if state.present else None


EPOCH = EpochFile()
