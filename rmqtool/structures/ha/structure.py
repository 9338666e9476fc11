"""The HA wire between a master and its slaves: no files of a store as the registry lists it."""

from __future__ import annotations

from rmqtool.structures.structure import Structure

HA = Structure("ha", "")
