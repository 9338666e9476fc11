"""What a structure is handed by the layers above it, typed where the structures live: the store being read
(`StoreView`, the engine's `StoreReader`), a check's report (`CheckReport`, verify's `VerifyReport`) and what
`verify FILE` opens a lone file with (`Opener`); the settings they carry are `settings.StoreSettings`. Each
lists exactly what the structures read of it; the engine and ops objects satisfy them by shape, so no
structure imports a layer above it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # start-up: the registry imports this module; these load with the methods that use them
    import numpy as np

    from rmqtool.files.paths import StorePaths
    from rmqtool.files.segments import SegmentFile
    from rmqtool.report import CollectSink, Finding, Reporter
    from rmqtool.structures.checkpoint import Checkpoint
    from rmqtool.structures.commitlog.chunk import ScanChunk
    from rmqtool.structures.consumequeue.queue import ConsumeQueue
    from rmqtool.structures.consumequeue.queues import QueueStore
    from rmqtool.structures.index.files import IndexFiles
    from rmqtool.structures.index.service import IndexService
    from rmqtool.structures.settings import StoreSettings


@runtime_checkable
class StoreView(Protocol):
    """A store opened read-only (or one commitlog segment given by path): its log, queues, index and checkpoint."""

    paths: StorePaths
    segments: list[SegmentFile]  # the log's segments in log order
    segment_starts: list[int]  # their starts, for bisection
    segment_size: int
    single_file: bool  # one segment given by path, not a store root
    start_note: str | None  # how a lone segment's start was found, when its name does not say

    @property
    def config(self) -> StoreSettings: ...

    @property
    def queues(self) -> QueueStore: ...

    def segment_for(self, offset: int) -> SegmentFile | None: ...

    def holes(self) -> list[tuple[int, int]]: ...

    def sequence_findings(self) -> list[Finding]: ...

    def scan(self, from_offset: int = 0, *, verify_crc: bool = True, until: int | None = None) \
        -> Iterator[ScanChunk]: ...

    def topics(self) -> list[str]: ...

    def queue_ids(self, topic: str) -> list[int]: ...

    def consume_queue(self, topic: str, queue_id: int) -> Iterator[tuple[np.ndarray, np.ndarray]]: ...

    def index_paths(self) -> list[Path]: ...

    def index_files(self) -> IndexFiles: ...

    def checkpoint(self) -> Checkpoint: ...


@runtime_checkable
class CheckReport(Protocol):
    """What a check's report offers a structure's checker: where findings go, the counts it adds to, and,
    once the walk is done, its findings and where the log's good records end."""

    reporter: Reporter  # add / extend
    collected: CollectSink  # the capped sink: add_each
    notes: list[str]  # how a file was read, for a person
    messages: int
    queue_entries: int
    index_entries: int
    queue_keys: dict[tuple[str, int], int]  # (topic, queue id) -> the number the log's windows give the queue
    log_end: int  # where the log's good records end (a store checked whole)

    @property
    def findings(self) -> list[Finding]: ...


@runtime_checkable
class Opener(Protocol):
    """What `verify FILE` opens a lone file with: the settings (`--config` or the broker's defaults) and a
    store reader of a store root, or of one commitlog segment, with them."""

    @property
    def config(self) -> StoreSettings: ...

    def reader(self, path: Path) -> StoreView: ...


class RecoveredStore(Protocol):
    """The store a recovery's re-dispatch left open (the engine's `MessageStore`), as recovery counts what it added."""

    queues: dict[tuple[str, int], ConsumeQueue]
    index: IndexService | None

    def dispatch(self) -> None: ...
