"""5.x controller mode: the epoch file and brokerIdentity as the registry lists it."""

from __future__ import annotations

from rmqtool.structures.structure import Structure

EPOCH = Structure("epoch", "epochFileCheckpoint")
