"""The on-disk structures of a store, one folder each, and the registry that lists them.

A structure's folder is the only place its layout and its rules live. `REGISTRY` lists them in
the order a store is checked (the log first, what points into it after); `verify`, `recover` and
`info` loop over it. A new structure is one folder and one line here. Hooks are named as
"module:function" and imported on first use, so the CLI starts without the structures it does not
touch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rmqtool.engine.reader import StoreReader
    from rmqtool.report import Finding


@dataclass(frozen=True)
class Structure:
    """One on-disk structure: its name, where its files live under a store root, and its file rules."""

    name: str
    folder: str  # under a store root
    file_rules: str | None = None  # "module:function" (reader) -> findings about its files alone
    refused_at_start: str | None = None  # "module:NAME": finding kinds the broker will not start with

    def file_findings(self, reader: StoreReader) -> list[Finding]:
        """What the structure's own rules find in its files, before any is read against another."""
        return _hook(self.file_rules)(reader) if self.file_rules else []

    def refusals(self, findings: list[Finding]) -> list[Finding]:
        """The findings among `findings` that make the broker refuse to start."""
        kinds = _hook(self.refused_at_start) if self.refused_at_start else ()
        return [f for f in findings if f.structure == self.name and f.kind in kinds]


def _hook(name: str) -> Callable:
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


REGISTRY: tuple[Structure, ...] = (
    Structure("commitlog", "commitlog", "rmqtool.structures.commitlog.geometry:store_findings",
              "rmqtool.structures.commitlog.geometry:REFUSED_AT_START"),
    Structure("consumequeue", "consumequeue", "rmqtool.structures.consumequeue.rules:store_findings",
              "rmqtool.structures.consumequeue.rules:REFUSED_AT_START"),
    Structure("index", "index"),
    Structure("checkpoint", "checkpoint"),
    Structure("epoch", "epochFileCheckpoint"),  # 5.x controller mode: epochs, brokerIdentity
    Structure("dledger", "dledger-*/data"),
    Structure("timerlog", "timerlog"),
    Structure("config", "config"),
    Structure("ha", ""),  # the HA wire between a master and its slaves: no files of a store
)


def structure(name: str) -> Structure:
    """The registered structure called `name`."""
    return next(s for s in REGISTRY if s.name == name)
