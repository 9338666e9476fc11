"""The DLedger commitlog as the registry lists it: the log's other implementation, entries that wrap
records (`dledger-<id>/data`)."""

from __future__ import annotations

from rmqtool.structures.structure import Structure


class DLedgerLog(Structure):
    name = "dledger"
    folder = "dledger-*/data"

    def recognise(self, head: bytes, size: int) -> str | None:
        """A data segment starts with an entry or its blank marker."""
        from rmqtool.structures.dledger import starts_entry

        return None if starts_entry(head) else "it does not start with a DLedger entry or its blank marker"


DLEDGER = DLedgerLog()
