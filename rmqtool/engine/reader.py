"""Read-only access to a store root (or a single file): commitlog scans, consume queues,
index files and the checkpoint. Nothing here creates, locks or changes a file."""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.opening import Store, load_config, open_store
from rmqtool.engine.recognition import require_file
from rmqtool.errors import RmqError
from rmqtool.files.paths import StorePaths, offset_name, parse_offset_name
from rmqtool.report import Finding
from rmqtool.structures import checkpoint, index
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.chunk import ScanChunk
from rmqtool.structures.commitlog.geometry import (
    covered,
    cut_part_at,
    holes,
    missing_segment_at,
    start_from_first_record,
    store_findings,
)
from rmqtool.structures.consumequeue.queues import QueueStore, open_queues
from rmqtool.structures.index.files import IndexFiles, IndexFileView
from rmqtool.structures.registry import place_in_store

if TYPE_CHECKING:  # numpy loads on first use: lookups start faster without it
    import numpy as np

from rmqtool.files.segments import (
    SegmentFile,
    data_end,
    nonzero_end,
    open_read_only,
    read_file,
    release_pages,
    single_segment,
)

_observers: list[Callable[[int, int], None]] = []  # told (bytes scanned, bytes to scan) as scans go


@contextmanager
def scan_observed(observer: Callable[[int, int], None]) -> Iterator[None]:
    """Within this block every commitlog scan tells `observer` how far it has got, in bytes."""
    _observers.append(observer)
    try:
        yield
    finally:
        _observers.remove(observer)


def _tell(done: int, total: int) -> None:
    for observer in _observers:
        observer(done, total)


def _scan_teller(base: int, end: int) -> Callable[[int | None], None]:
    """A `tell(at)` for a scan of the log from `base` to `end`: observers hear (bytes scanned, bytes to scan);
    `at` None: the scan is done."""
    total = end - base

    def tell(at: int | None) -> None:
        _tell(total if at is None else min(max(at - base, 0), total), total)

    return tell


class StoreReader:
    """A store opened read-only (through `open_store`, so its geometry is the files'), or one commitlog
    segment given by path."""

    def __init__(self, source: str | os.PathLike | Store, config: StoreConfig | str | os.PathLike | None = None) \
            -> None:
        store = source if isinstance(source, Store) else None
        p = store.root if store else Path(source)
        if not p.exists():
            raise RmqError(f"{p}: no such file or directory")
        self.single_file = store is None and p.is_file()
        self.start_note: str | None = None  # how a single file's start was found, when its name does not say
        if self.single_file:
            require_file(p, "commitlog segment")
            self.config = load_config(config)

            placed = place_in_store(p)
            self.paths = StorePaths(placed[1] if placed is not None else p.parent)
            self.segments = [self._single_segment(p)]
            self.store = None
        else:
            self.store = store or open_store(p, config)
            self.config = self.store.config
            self.paths = self.store.paths
            if not self.paths.is_store():
                raise RmqError(f"{p}: not a RocketMQ store (no commitlog/ folder)")
            self.segments = list(self.store.segments)
        self.given = self.config.given
        self.segment_starts = [seg.start for seg in self.segments]  # for bisection
        self.segment_size = self._segment_size()
        self._queues: QueueStore | None = None
        self._data_end: int | None = None

    # -- commitlog ------------------------------------------------------------------------
    def _single_segment(self, path: Path) -> SegmentFile:
        """One segment given by path: its start is its name when that is an offset, else its first record's
        (said in `start_note`)."""
        seg = single_segment(path)
        if parse_offset_name(path.name) is not None:
            return seg
        with open_read_only(path) as buf:
            start = start_from_first_record(buf)
        if start is None:
            return seg
        self.start_note = (f"{path}: its name is not an offset; its first record says it starts at {start}: read as "
                           f"{offset_name(start)}")
        return SegmentFile(path, start, seg.size)

    @property
    def dledger(self) -> bool:
        """Whether the log is a DLedger data log (records wrapped in entries)."""
        return self.store is not None and self.store.dledger

    def _segment_size(self) -> int:
        if self.single_file and "mappedFileSizeCommitLog" not in self.given:
            return self.segments[0].size
        return self.config.mappedFileSizeCommitLog

    def segment_for(self, offset: int) -> SegmentFile | None:
        """The segment that holds `offset`: found by bisection (a store may have thousands); segments of a
        damaged store that overlap are searched in order, as they are listed."""
        i = bisect.bisect_right(self.segment_starts, offset) - 1
        if i >= 0 and offset < self.segments[i].start + max(self.segments[i].size, 1):
            return self.segments[i]
        return next((seg for seg in self.segments[: i + 1] if seg.start <= offset < seg.start + max(seg.size, 1)),
                    None)

    def sequence_findings(self) -> list[Finding]:
        """The commitlog's segment-sequence rule (`structures.commitlog.geometry`) over this store."""
        return store_findings(self)

    def holes(self) -> list[tuple[int, int]]:
        """[from, to) of each stretch between the first and the last segment that no segment holds (by the
        segment-sequence rule of `structures.commitlog.geometry`)."""
        return holes(self.segments, self.segment_size)

    def scan(self, from_offset: int = 0, *, verify_crc: bool = True, until: int | None = None) \
            -> Iterator[ScanChunk]:
        """Every good record from `from_offset` on (starting before `until`), in log order, with findings
        as data."""
        from rmqtool.structures.commitlog.scan import (  # start-up: numba, not on a lookup
            SegmentEnd,
            SegmentScanner,
            foresee_scan,
            lost_tail,
        )

        scanner_class = SegmentScanner
        if self.dledger:
            from rmqtool.structures.dledger.scan import DLedgerScanner  # start-up: numba, not on a lookup

            scanner_class = DLedgerScanner
        if not self.segments:
            return
        base = max(from_offset, self.segments[0].start)
        allocated = self._allocated_end() if until is None else min(until, self._allocated_end())
        foresee_scan(allocated - base)  # a big log compiles the kernels at once
        if _observers:  # the bar counts the log's data this scan covers, not the files' size
            end = self._written_end() if until is None else min(until, self._written_end())
            tell = _scan_teller(base, max(end, base))
        first = True
        pending_hole: Finding | None = None
        for seg in self.segments:
            if seg.start + seg.size <= from_offset and seg.size:
                continue
            if until is not None and seg.start >= until:
                break
            if seg.size < message.reach(0):  # not even a blank marker fits
                yield ScanChunk(None, [Finding(str(seg.path), seg.start, "segment file too small to hold a record",
                                               seg.size)])
                continue
            start = max(from_offset - seg.start, 0)
            with open_read_only(seg.path) as buf:
                # a DLedger scan starts at an entry: from the segment's start, records before `start` dropped
                written = data_end(seg.path)
                at = 0 if self.dledger or not first else self._first_record_at(buf, seg, start, written)
                below = seg.start + start if self.dledger and first and start else None
                scanner = scanner_class(buf, seg.start, str(seg.path), verify_crc=verify_crc, start=at,
                                        data_end=written,
                                        limit=None if until is None else until - seg.start)
                first = False
                released = 0
                for item in scanner.batches():
                    found, scanner.findings = scanner.findings, []
                    if isinstance(item, SegmentEnd):
                        if pending_hole and item.pos > 0:
                            found.insert(0, pending_hole)
                        pending_hole = None
                        if item.in_zeros:
                            pending_hole = lost_tail(item, max(seg.size, self.segment_size))
                        if found:
                            yield ScanChunk(None, found)
                    else:
                        if below is not None:
                            item = item.select(item.offsets >= below)
                        if pending_hole and len(item):
                            found.insert(0, pending_hole)
                            pending_hole = None
                        yield ScanChunk(item, found)
                        released = release_pages(buf, released, int(item.pos[-1]) if len(item) else released)
                        if _observers:
                            tell(seg.start + released)
                del scanner
        if _observers:
            tell(None)

    def _allocated_end(self) -> int:
        """Where the last segment's allocated extents end (its holes aside, zeros written ahead of time counted): an
        upper bound of the written end that costs one lseek, not a read."""
        last = self.segments[-1]
        end = data_end(last.path)
        return last.start + (last.size if end is None else end)

    def _written_end(self) -> int:
        """Where the log's data ends: the last segment's start plus its non-zero bytes (the unwritten tail of
        a preallocated file is a hole or zeros). Found once per reader, on the first scan a bar watches."""
        if self._data_end is None:
            last = self.segments[-1]
            self._data_end = last.start + nonzero_end(last.path, 0)
        return self._data_end

    def _first_record_at(self, buf, seg: SegmentFile, pos: int, written: int | None) -> int:
        """`pos` when a record (or the end) starts there, else the next record start (searched up to
        `written`, where the file's unwritten hole begins: a 1 GiB tail of zeros is not read)."""
        if pos == 0 or pos >= len(buf):
            return pos
        if written is not None and pos >= written:
            return pos
        probe = message.decode(buf, pos, verify_crc=False, expected_offset=seg.start + pos)
        if not isinstance(probe, message.Corrupt) or not any(buf[pos : pos + message.PREFIX.size]):
            return pos  # a record, or unwritten bytes where the scan ends as it would from the start
        from rmqtool.structures.commitlog.scan import SegmentScanner  # start-up: numba, not on a lookup

        found = SegmentScanner(buf, seg.start, str(seg.path), data_end=written).next_record_start(pos)
        return found if found is not None else len(buf)

    def read_record(self, offset: int, *, verify_crc: bool = True) -> message.Message | message.Blank | \
            message.Corrupt:
        """The record at physical offset `offset` through the per-record decoder."""
        seg = self.segment_for(offset)
        if seg is None:
            raise RmqError(self.describe_absence(offset))
        with open_read_only(seg.path) as buf:
            return message.decode(buf, offset - seg.start, verify_crc=verify_crc, expected_offset=offset)

    def describe_range(self) -> str:
        """The stretches of the log the segments hold: "segments cover 0..65536, 131072..196608" (a truncated
        segment's lost part is not held either)."""
        if not self.segments:
            return "no segments"
        return "segments cover " + ", ".join(f"{lo}..{hi}" for lo, hi in covered(self.segments))

    def describe_absence(self, offset: int) -> str:
        """Why no segment holds `offset`: it falls in a hole (the missing segment named), in the part a truncated
        segment lost (the segment and the lost range named), or outside the log."""
        missing = missing_segment_at(self.segments, self.segment_size, offset)
        cut = cut_part_at(self.segments, self.segment_size, offset) if missing is None else None
        if cut is not None:
            seg, lost_from, lost_to = cut
            return (f"offset {offset} falls in the missing part of truncated segment {seg.path.name}: the file holds "
                    f"{seg.size} of its {self.segment_size} bytes, so {lost_from}..{lost_to} is missing "
                    f"({self.describe_range()})")
        if missing is None:
            return f"offset {offset} is outside the commitlog ({self.describe_range()})"
        start, end = missing
        return (f"offset {offset} falls in a hole of the commitlog: segment {offset_name(start)} ({start}..{end}) is "
                f"missing ({self.describe_range()})")

    # -- consume queues ------------------------------------------------------------------------
    @property
    def queues(self) -> QueueStore:
        """The store's consume queues, in whichever form its files hold them."""
        if self._queues is None:
            log_start = self.segments[0].start if self.segments and not self.dledger else 0
            self._queues = open_queues(self.paths, self.config.mappedFileSizeConsumeQueue, log_start)
        return self._queues

    def topics(self) -> list[str]:
        return self.queues.topics()

    def queue_ids(self, topic: str) -> list[int]:
        return self.queues.queue_ids(topic)

    def consume_queue(self, topic: str, queue_id: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(queue offsets, entries) of topic/queue_id in chunks, read by the broker's rule."""
        return self.queues.read(topic, queue_id)

    # -- index ---------------------------------------------------------------------------------
    def index_paths(self) -> list[Path]:
        d = self.paths.index
        return [d / name for name in self.index_names()]

    def index_names(self) -> list[str]:
        return index.file_names(self.paths.index)

    def index_files(self) -> IndexFiles:
        """The store's index files read with its settings (`structures.index.files`)."""
        return IndexFiles(self.config, self.given)

    def index_file(self, path: Path) -> IndexFileView:
        return self.index_files().index_file(path)

    # -- checkpoint ----------------------------------------------------------------------------
    def checkpoint(self) -> checkpoint.Checkpoint:
        path = self.paths.checkpoint
        if not path.is_file():
            raise RmqError(f"{self.paths.root}: no checkpoint file")
        return checkpoint.decode_checked(read_file(path), path)

    def abort_present(self) -> bool:
        return self.paths.abort.exists()


def open_reader(path: str | os.PathLike, config_path: str | os.PathLike | None = None) -> StoreReader:
    """A reader over `path` (a store root or one segment) with the settings of `config_path`, if given."""
    return StoreReader(path, config_path)


def open_root_reader(path: str | os.PathLike, config_path: str | os.PathLike | None = None) -> StoreReader:
    """A reader of the store root at `path`, for commands that read a whole store (one segment file is refused)."""
    reader = open_reader(path, config_path)
    if reader.single_file:
        raise RmqError(f"{path}: give the store root, not one file")
    return reader
