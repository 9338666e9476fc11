"""The one report type: corruption, refusals and cuts, emitted as data instead of raised mid-file."""

from __future__ import annotations

from dataclasses import asdict, dataclass

ERROR = "error"
WARNING = "warning"

UNCLASSIFIED = "unclassified"  # the kind of a finding whose emitter names none

# What a finding is about; the folders of its path name it when the emitter does not.
COMMITLOG, CONSUMEQUEUE, INDEX, CHECKPOINT, STORE = "commitlog", "consumequeue", "index", "checkpoint", "store"


@dataclass(frozen=True)
class Finding:
    """Something wrong at `offset` of `file`, covering `bytes` bytes.

    `structure` is what it is about (commitlog, consumequeue, index, checkpoint, store) and
    `kind` a short stable slug of what is wrong ("crc-mismatch", "missing-segment", ...).
    For a consume queue `file` is the queue's folder and `offset` the entry's logical byte.
    """

    file: str
    offset: int
    reason: str
    bytes: int
    severity: str = ERROR
    structure: str = ""
    kind: str = UNCLASSIFIED

    def __post_init__(self) -> None:
        if not self.structure:
            object.__setattr__(self, "structure", structure_of(self.file))

    def to_json(self) -> dict:
        return asdict(self)


def structure_of(path: str) -> str:
    """The structure a store path belongs to, from the folder names near its end (`store` when none says).

    Consume queues are looked for first: a topic may be named like another structure's folder.
    """
    parts = ["", "", "", "", *path.replace("\\", "/").split("/")]
    if CONSUMEQUEUE in parts[-4:]:
        return CONSUMEQUEUE
    for folder in (COMMITLOG, INDEX):
        if folder in parts[-2:]:
            return folder
    return CHECKPOINT if parts[-1] == CHECKPOINT else STORE
