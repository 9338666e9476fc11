"""A 5.x store's replication (HA) state, read-only: its epochs, its broker identity and the checkpoint's
5.x longs (masterFlushedOffset, confirmPhyOffset). `info` shows its summary, `decode epoch` all of it,
and a comparison of two replicas reads it from both."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rmqtool.report import Finding
from rmqtool.structures import checkpoint, epoch
from rmqtool.structures.epoch import identity

CHECKPOINT_FILE = "checkpoint"


@dataclass
class HaState:
    epochs: epoch.Loaded | None  # None: neither the epoch file nor its .bak exists
    identity: identity.Identity | None
    identity_temp: identity.Identity | None
    masterFlushedOffset: int | None = None
    confirmPhyOffset: int | None = None

    @property
    def present(self) -> bool:
        """Whether the store holds any of it."""
        return any(x is not None for x in (self.epochs, self.identity, self.identity_temp, self.masterFlushedOffset,
                                           self.confirmPhyOffset))

    @property
    def findings(self) -> list[Finding]:
        """The epoch files' problems, then the identity files the broker does not load."""
        out = list(self.epochs.findings) if self.epochs else []
        return out + [f for f in (i.finding() for i in (self.identity, self.identity_temp) if i) if f]

    def to_json(self) -> dict:
        """Everything, for `decode epoch`."""
        return {"epochFile": self.epochs.to_json() if self.epochs else None, **self._identities(),
                **self._offsets(), "findings": [f.to_json() for f in self.findings]}

    def summary(self) -> dict:
        """The section `info` shows."""
        doc: dict = {"epochFile": None}
        if self.epochs is not None:
            last = self.epochs.last
            doc["epochFile"] = {"loadedFrom": self.epochs.source.name if self.epochs.source else None,
                                "brokerStarts": self.epochs.broker_starts, "epochs": len(self.epochs.entries),
                                "lastEpoch": last.epoch if last else None,
                                "lastStartOffset": last.startOffset if last else None}
        return {**doc, **self._identities(), **self._offsets(), "findings": [f.to_json() for f in self.findings]}

    def _identities(self) -> dict:
        return {"brokerIdentity": self.identity.to_json() if self.identity else None,
                "brokerIdentityTemp": self.identity_temp.to_json() if self.identity_temp else None}

    def _offsets(self) -> dict:
        return {"masterFlushedOffset": self.masterFlushedOffset, "confirmPhyOffset": self.confirmPhyOffset}


def _checkpoint_longs(path: Path) -> tuple[int | None, int | None]:
    """The checkpoint's 5.x longs; (None, None) when it has none or cannot be read."""
    try:
        buf = path.read_bytes()
    except OSError:
        return None, None
    if checkpoint.refusal(buf) is not None:
        return None, None
    cp = checkpoint.decode(buf)
    return cp.masterFlushedOffset, cp.confirmPhyOffset


def ha_state(root: Path) -> HaState:
    """The HA state of the store at `root` (default paths: storePathEpochFile and storePathBrokerIdentity unset)."""
    root = Path(root)
    main, temp = identity.read_store(root)
    return HaState(epoch.load_store(root), main, temp, *_checkpoint_longs(root / CHECKPOINT_FILE))
