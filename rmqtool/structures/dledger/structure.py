"""A DLedger commitlog (`dledger-<id>/data/<offset>`): entries that wrap records."""

from __future__ import annotations

from pathlib import Path

from rmqtool.files.paths import DLEDGER_PREFIX
from rmqtool.structures.dledger import DATA_DIR, starts_entry
from rmqtool.structures.structure import Structure


class DLedgerLog(Structure):
    name = "dledger"
    folder = f"{DLEDGER_PREFIX}*/{DATA_DIR}"

    def recognise(self, head: bytes, size: int) -> str | None:
        """A DLedger segment starts with an entry (magic 1) or its blank (magic -1), each with a positive size."""
        return None if starts_entry(head) else "its first bytes are neither a DLedger entry nor its blank"

    def place(self, path: Path) -> Path | None:
        data = path.parent
        if data.name == DATA_DIR and data.parent.name.startswith(DLEDGER_PREFIX) and path.name.isdigit():
            return data.parent.parent
        return None


    def owns(self, path: Path, root: Path) -> bool:
        """Every file under a `dledger-<id>/` folder: its data segments, its index and its state."""
        rel = path.relative_to(root) if path.is_relative_to(root) else None
        return rel is not None and len(rel.parts) > 1 and rel.parts[0].startswith(DLEDGER_PREFIX)

    def keeps_folder(self, folder: Path, root: Path) -> bool:
        return folder.parent == root and folder.name.startswith(DLEDGER_PREFIX)


DLEDGER = DLedgerLog()
