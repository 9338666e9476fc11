"""5.x controller mode: the epoch file and brokerIdentity as the registry lists it."""

from __future__ import annotations

from pathlib import Path

from rmqtool.structures.config.persist import BAK
from rmqtool.structures.epoch import FILE, java_int, lines_of
from rmqtool.structures.epoch.state import ha_state
from rmqtool.structures.replicas import Comparison, Pair
from rmqtool.structures.structure import Structure
from rmqtool.structures.view import StoreView


class EpochFile(Structure):
    name = "epoch"
    folder = FILE

    def recognise(self, head: bytes, size: int) -> str | None:
        """An epoch file is text whose first line is its entry count (a Java int)."""
        lines = lines_of(head)
        first = lines[0][1] if lines else b""
        try:
            return None if java_int(first.decode("utf-8")) is not None else "its first line is not an entry count"
        except UnicodeDecodeError:
            return "not UTF-8 text"

    def place(self, path: Path) -> Path | None:
        return path.parent if path.name in (FILE, FILE + BAK) else None

    def info(self, view: StoreView, doc: dict) -> tuple[str, dict] | None:
        """The 5.x replication state (epochs, broker identity, the checkpoint's 5.x longs); None without any."""
        state = ha_state(view.paths.root)
        return ("ha", state.summary()) if state.present else None

    # -- two replicas (`diff`) ------------------------------------------------------------------------
    def compare(self, pair: Pair) -> Comparison | None:
        from rmqtool.structures.epoch.compare import compare  # start-up: the registry loads no comparer

        return compare(pair)


EPOCH = EpochFile()
