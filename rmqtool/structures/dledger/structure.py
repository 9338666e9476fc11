"""A DLedger commitlog: entries that wrap records as the registry lists it."""

from __future__ import annotations

from rmqtool.structures.structure import Structure

DLEDGER = Structure("dledger", "dledger-*/data")
