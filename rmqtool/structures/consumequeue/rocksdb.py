"""The 5.x RocksDB consume queue, opened read-only without touching the store.

The database is opened read-only through a private folder of symbolic links to its files,
so that nothing (not the binding's own settings file, not RocksDB's info log) is ever
written into `consumequeue/`, and a running broker's lock is never taken or disturbed.
Needs the `rocksdict` binding (`pip install 'rmqtool[rocksdb]'`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from rmqtool.errors import RmqError
from rmqtool.report import WARNING, Finding
from rmqtool.structures import consumequeue
from rmqtool.structures.consumequeue import rockskeys as rocksqueue

if TYPE_CHECKING:
    import numpy as np

STRUCTURE = "consumequeue"
CHUNK_ENTRIES = 1 << 16  # entries per array handed to a reader
INSTALL_HINT = "pip install 'rmqtool[rocksdb]'"


class RocksQueues:
    """Every queue of one RocksDB consume-queue database (`consumequeue/` of a 5.x store)."""

    kind = "rocksdb"

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._db = None
        self._bounds: dict[tuple[str, int], dict[str, rocksqueue.Bound]] | None = None
        self.checkpoint_offset: int | None = None
        self._queues: list[tuple[str, int]] | None = None
        self._known: set[tuple[str, int]] = set()
        self._readable: dict[tuple[str, int], int] = {}  # queue -> first offset a full read did not reach
        self._families: set[str] = set()

    # -- opening -------------------------------------------------------------------------------
    def _open(self):
        if self._db is not None:
            return self._db
        try:
            from rocksdict import AccessType, Options, Rdict
        except ImportError:
            raise RmqError(f"{self.directory} is a RocksDB consume queue; reading it needs the rocksdict "
                           f"package: {INSTALL_HINT}") from None
        farm = Path(tempfile.mkdtemp(prefix="rmqtool-rocksdb-"))
        weakref.finalize(self, shutil.rmtree, farm, True)
        try:
            for entry in os.scandir(self.directory):
                if entry.is_file() and entry.name != "LOCK":
                    os.symlink(os.path.abspath(entry.path), farm / entry.name)
            families = Rdict.list_cf(str(farm))
            self._families = set(families)
            extra = {name: Options(raw_mode=True) for name in families if name != rocksqueue.DEFAULT_FAMILY}
            self._db = Rdict(str(farm), options=Options(raw_mode=True), column_families=extra,
                             access_type=AccessType.read_only())
        except OSError as e:
            raise RmqError(f"{self.directory}: cannot read the RocksDB consume queue: {e.strerror or e}") from None
        except Exception as e:  # the binding raises plain Exceptions carrying RocksDB's status text
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise RmqError(f"{self.directory}: cannot open the RocksDB consume queue: {reason}") from None
        weakref.finalize(self, self._db.close)
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # -- the offset table ------------------------------------------------------------------------
    def offset_table(self) -> dict[tuple[str, int], dict[str, rocksqueue.Bound]]:
        """{(topic, queueId): {"max": Bound, "min": Bound}} from the `offset` column family."""
        if self._bounds is None:
            db = self._open()
            self._bounds = {}
            if rocksqueue.OFFSET_FAMILY in self._families:
                for key, value in db.get_column_family(rocksqueue.OFFSET_FAMILY).items():
                    row = rocksqueue.parse_bound(key, value)
                    if isinstance(row, int):
                        self.checkpoint_offset = row
                    elif row is not None:
                        self._bounds.setdefault((row.topic, row.queue_id), {})[row.kind] = row
        return self._bounds

    # -- queues ----------------------------------------------------------------------------------
    def queues(self) -> list[tuple[str, int]]:
        """(topic, queueId) of every queue holding entries: one seek per queue, not a full scan."""
        if self._queues is None:
            it = self._open().iter()
            it.seek_to_first()
            found = []
            while it.valid():
                parsed = rocksqueue.parse_entry_key(it.key())
                if parsed is None:
                    it.next()
                    continue
                found.append((parsed.topic, parsed.queue_id))
                it.seek(rocksqueue.after_queue(it.key()[: parsed.prefix_len]))
            del it
            self._queues = sorted(found)
            self._known = set(found)
        return self._queues

    def topics(self) -> list[str]:
        return sorted({t for t, _ in self.queues()})

    def queue_ids(self, topic: str) -> list[int]:
        return [q for t, q in self.queues() if t == topic]

    def location(self, topic: str, queue_id: int) -> str:
        return f"{self.directory} ({topic}/{queue_id})"

    def _first_offset(self, topic: str, queue_id: int) -> int | None:
        """Where the queue's entries start: its first key, or the table's min when that is higher."""
        prefix = rocksqueue.queue_prefix(topic, queue_id)
        it = self._open().iter()
        it.seek(prefix)
        if not it.valid() or not bytes(it.key()).startswith(prefix):
            return None
        first = rocksqueue.parse_entry_key(it.key())
        del it
        low = self.offset_table().get((topic, queue_id), {}).get("min")
        start = first.queue_offset if first else 0
        return max(start, low.queue_offset) if low is not None else start

    def _require(self, topic: str, queue_id: int) -> None:
        if (topic, queue_id) not in self._known and (topic, queue_id) not in set(self.queues()):
            raise consumequeue.missing_queue(self.topics(), self.directory.parent, topic, queue_id)

    def read_rows(self, topic: str, queue_id: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(queue offsets, entries, stored store timestamps) in chunks: the consecutive entries from
        the queue's first one up to the first missing queue offset (remembered for `findings`)."""
        self._require(topic, queue_id)
        low, high = self.bounds(topic, queue_id)
        at = low
        while at < high:
            want = min(CHUNK_ENTRIES, high - at)
            values = self._run(topic, queue_id, at, want)
            if values:
                yield _rows(at, values)
            at += len(values)
            if len(values) < want:
                break
        self._readable[(topic, queue_id)] = at

    def _run(self, topic: str, queue_id: int, at: int, count: int) -> list[bytes]:
        """The values of queue offsets at, at+1, ... (up to `count`), stopping before the first missing one.

        Fast path: `count` values in key order from `at`; they are exactly offsets at..at+count-1 when the
        last one is the value stored under at+count-1 (in a queue commitLogOffsets rise, so two entries
        never share a value). Otherwise key by key."""
        db = self._open()
        values = list(islice(db.values(from_key=rocksqueue.entry_key(topic, queue_id, at)), count))
        if len(values) == count and sum(map(len, values)) == count * rocksqueue.VALUE_LEN \
                and db.get(rocksqueue.entry_key(topic, queue_id, at + count - 1)) == values[-1]:
            return values
        prefix = rocksqueue.queue_prefix(topic, queue_id)
        values = []
        for key, value in db.items(from_key=rocksqueue.entry_key(topic, queue_id, at)):
            parsed = rocksqueue.parse_entry_key(bytes(key)) if bytes(key).startswith(prefix) else None
            if parsed is None or parsed.queue_offset != at + len(values) or len(value) != rocksqueue.VALUE_LEN \
                    or len(values) == count:
                break
            values.append(bytes(value))
        return values

    def read(self, topic: str, queue_id: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for qoffs, entries, _ in self.read_rows(topic, queue_id):
            yield qoffs, entries

    def entry(self, topic: str, queue_id: int, queue_offset: int) -> tuple[int, int, int] | None:
        self._require(topic, queue_id)
        value = self._open().get(rocksqueue.entry_key(topic, queue_id, queue_offset))
        found = rocksqueue.decode_value(bytes(value)) if value is not None else None
        return found[:3] if found else None

    def commit_log_offsets(self, topic: str, queue_id: int, queue_offsets: np.ndarray) -> np.ndarray:
        """The commitLogOffset of the entry at each queue offset; -1 where there is none."""
        import numpy as np

        found = (self.entry(topic, queue_id, int(q)) for q in queue_offsets)
        return np.fromiter((e[0] if e is not None else -1 for e in found), dtype=np.int64, count=len(queue_offsets))

    def findings(self) -> list[Finding]:
        """The offset table against the entries: each queue's max row names its last entry, each min row
        an entry that exists; a queue with entries has a max row."""
        out: list[Finding] = []
        table = self.offset_table()
        for topic, qid in self.queues():
            rows = table.get((topic, qid), {})
            low, high = self.bounds(topic, qid)
            if (topic, qid) not in self._readable:  # verify has read every queue already
                for _ in self.read(topic, qid):
                    pass
            readable = self._readable[(topic, qid)]
            if readable < high:
                out.append(Finding(self.location(topic, qid), readable, f"queue {topic}/{qid} has no entry "
                                   f"{readable}: entries {readable + 1}..{high - 1} are past the gap and never "
                                   "read", 0, structure=STRUCTURE, kind="queue-gap"))
            top = rows.get("max")
            if top is None:
                out.append(Finding(self.location(topic, qid), high - 1, f"queue {topic}/{qid} has entries "
                                   f"{low}..{high - 1} but no max row in the offset table", 0, WARNING,
                                   STRUCTURE, "offset-table"))
            elif top.queue_offset != high - 1:
                out.append(Finding(self.location(topic, qid), top.queue_offset, f"offset table max of {topic}/{qid}"
                                   f" is {top.queue_offset}, the last entry is {high - 1}", 0, structure=STRUCTURE,
                                   kind="offset-table"))
            else:
                out += _table_row_findings(self.location(topic, qid), topic, qid, top,
                                           self.entry(topic, qid, top.queue_offset))
            if "min" in rows:
                out += _table_row_findings(self.location(topic, qid), topic, qid, rows["min"],
                                           self.entry(topic, qid, rows["min"].queue_offset))
        known = set(self.queues())
        for topic, qid in table:
            if (topic, qid) not in known:
                out.append(Finding(str(self.directory), 0, f"offset table names {topic}/{qid}, which has no "
                                   "entries", 0, WARNING, STRUCTURE, "offset-table"))
        return out

    def bounds(self, topic: str, queue_id: int) -> tuple[int, int]:
        low = self._first_offset(topic, queue_id)
        if low is None:
            return 0, 0
        it = self._open().iter()
        it.seek_for_prev(rocksqueue.after_queue(rocksqueue.queue_prefix(topic, queue_id)))
        last = rocksqueue.parse_entry_key(bytes(it.key())) if it.valid() else None
        del it
        return low, max(low, last.queue_offset + 1) if last is not None else low


def _table_row_findings(location: str, topic: str, queue_id: int, bound: rocksqueue.Bound,
                        entry: tuple[int, int, int] | None) -> list[Finding]:
    """The offset table's min or max row of a queue against the entry it names."""
    where = f"offset table {bound.kind} of {topic}/{queue_id}"
    if entry is None:
        return [Finding(location, bound.queue_offset, f"{where} names queue offset {bound.queue_offset}, which has "
                        "no entry", 0, structure=STRUCTURE, kind="offset-table")]
    if entry[0] != bound.commit_log_offset:
        return [Finding(location, bound.queue_offset, f"{where}: queue offset {bound.queue_offset} at "
                        f"{bound.commit_log_offset}, but its entry points at {entry[0]}", 0, structure=STRUCTURE,
                        kind="offset-table")]
    return []


def _rows(first: int, values: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import numpy as np

    packed = np.frombuffer(b"".join(values), dtype=rocksqueue.VALUE.dtype())
    entries = np.empty(len(values), dtype=consumequeue.entry_dtype())
    for name in ("commitLogOffset", "size", "tagsCode"):
        entries[name] = packed[name]
    times = packed["storeTimestamp"].astype(np.int64)
    return np.arange(first, first + len(values), dtype=np.int64), entries, times
