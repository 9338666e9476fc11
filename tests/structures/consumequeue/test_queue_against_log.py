"""The consume queues checked against the log: one damaged entry is one finding, and the healthy entries
after it are read against their own records (an entry out of log order holds back none of them)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from cli_helpers import CONF, FIXTURE, fixture_copy, run

from rmqtool.engine.reader import open_reader
from rmqtool.ops.verify import verify_path
from rmqtool.report import CONSUMEQUEUE, ERROR, Finding
from rmqtool.structures import consumequeue

QUEUE = Path("consumequeue") / "OrderTopic" / "0"
FILE = QUEUE / f"{0:020d}"
ENTRY = 5


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return fixture_copy(tmp_path)


def log_end() -> int:
    """Where the fixture's last record ends."""
    last = [c.batch for c in open_reader(FIXTURE, CONF).scan() if c.batch is not None and len(c.batch)][-1]
    return int(last.offsets[-1] + last.cols["totalSize"][-1])


def entry_offset(k: int) -> int:
    return consumequeue.entry_at((FIXTURE / FILE).read_bytes(), k)[0]


def set_entry_offset(store: Path, k: int, offset: int) -> None:
    """Entry `k` of the queue's first file pointed at `offset` (its size and tagsCode kept)."""
    path = store / FILE
    data = bytearray(path.read_bytes())
    struct.pack_into(">q", data, consumequeue.byte_of(k), offset)
    path.write_bytes(bytes(data))


def test_entry_offset_raised_by_2_to_32_is_one_finding_past_the_end_of_the_log(store):
    wrong = entry_offset(ENTRY) + (1 << 32)
    set_entry_offset(store, ENTRY, wrong)
    report = verify_path(store, CONF)
    found = [f for f in report.findings if f.severity == ERROR]
    assert len(found) == 1 and report.problems == 1
    f = found[0]
    assert (f.file, f.offset, f.bytes, f.structure, f.kind) == (
        str(store / QUEUE), consumequeue.byte_of(ENTRY), consumequeue.ENTRY_LEN, CONSUMEQUEUE, "entry-past-log-end")
    assert f.reason == f"entry {ENTRY} points at {wrong}, past the end of the log ({log_end()})"


def test_entry_pointing_inside_the_log_where_no_record_starts_is_one_finding(store):
    wrong = entry_offset(ENTRY) + 1
    set_entry_offset(store, ENTRY, wrong)
    report = verify_path(store, CONF)
    assert [f for f in report.findings if f.severity == ERROR] == [Finding(
        str(store / QUEUE), consumequeue.byte_of(ENTRY), f"entry {ENTRY} points at {wrong}, where no record starts",
        consumequeue.ENTRY_LEN, ERROR, CONSUMEQUEUE, "entry-without-record")]


def test_entry_pointing_at_a_later_segments_record_is_one_mismatch_naming_that_record(store):
    """An entry out of log order is read against the record it points at, once the log is walked."""
    later = entry_offset(ENTRY + 25)  # a record of this queue in the last segment: windows later
    set_entry_offset(store, ENTRY, later)
    report = verify_path(store, CONF)
    found = [f for f in report.findings if f.severity == ERROR]
    assert [(f.file, f.offset, f.kind) for f in found] == [
        (str(store / QUEUE), consumequeue.byte_of(ENTRY), "entry-mismatch")]
    assert found[0].reason.startswith(f"entry {ENTRY} does not match the record at {later} (OrderTopic/0 queue "
                                      f"offset {ENTRY + 25}, ")


def test_cli_counts_one_problem_for_one_raised_entry(store):
    set_entry_offset(store, ENTRY, entry_offset(ENTRY) + (1 << 32))
    out = run("verify", str(store), "--config", str(CONF))
    assert out.returncode == 1 and "1 problems" in out.stdout


class _Queues:
    """A reader of one queue whose files hold `files` (lists of commitLogOffsets), for the cursor alone."""

    def __init__(self, files: list[list[int]]) -> None:
        self.files = files
        self.queues = self

    def location(self, topic: str, queue_id: int) -> str:
        return f"cq/{topic}/{queue_id}"

    def consume_queue(self, topic: str, queue_id: int):
        import numpy as np

        first = 0
        for offsets in self.files:
            entries = np.zeros(len(offsets), dtype=consumequeue.entry_dtype())
            entries["commitLogOffset"] = offsets
            yield np.arange(first, first + len(offsets), dtype=np.int64), entries
            first += len(offsets)


def taken(cursor, end) -> list[int]:
    return cursor.take(end)[1]["commitLogOffset"].tolist()


def test_cursor_takes_an_entry_raised_past_the_window_with_its_healthy_successor():
    from rmqtool.structures.consumequeue.check import QueueCursor

    cursor = QueueCursor(_Queues([[10, 20, 1 << 40, 40], [50, 60]]), "T", 0, 0)
    assert taken(cursor, 30) == [10, 20]
    assert taken(cursor, 55) == [1 << 40, 40, 50]  # the raised entry does not hold back 40 and 50
    assert taken(cursor, None) == [60]


def test_cursor_takes_a_raised_last_entry_of_a_file_with_the_next_files_first():
    from rmqtool.structures.consumequeue.check import QueueCursor

    cursor = QueueCursor(_Queues([[10, 1 << 40], [30, 40]]), "T", 0, 0)
    assert taken(cursor, 35) == [10, 1 << 40, 30]
    assert taken(cursor, 45) == [40]


def test_cursor_holds_back_entries_past_the_window_in_log_order():
    from rmqtool.structures.consumequeue.check import QueueCursor

    cursor = QueueCursor(_Queues([[10, 20, 30]]), "T", 0, 0)
    assert taken(cursor, 15) == [10]
    assert taken(cursor, 15) == []
    assert taken(cursor, None) == [20, 30]
