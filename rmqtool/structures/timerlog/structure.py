"""The 5.x timer log as the registry lists it."""

from __future__ import annotations

from rmqtool.structures.structure import Structure

TIMERLOG = Structure("timerlog", "timerlog")
