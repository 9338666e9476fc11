"""A queue's bounds as the broker loads them: max after the last file's written entries, min where the log starts."""

from __future__ import annotations

import numpy as np

from rmqtool.files.paths import StorePaths, offset_name
from rmqtool.structures import consumequeue
from rmqtool.structures.consumequeue.queues import FileQueues


def _entries(offsets: list[int]) -> bytes:
    n = len(offsets)
    return consumequeue.encode_entries(np.asarray(offsets), np.full(n, 100), np.zeros(n))


def test_the_written_count_read_a_chunk_at_a_time_equals_the_whole_file_rule():
    for written in (0, 1, 4095, 4096, 4097, 9000):
        buf = _entries(list(range(1, written + 1))) + bytes(20 * 300)
        assert consumequeue.written_entries(buf) == written == \
            consumequeue.written_count(consumequeue.decode_entries(buf))


def test_a_hole_ends_the_queue_even_past_a_chunk():
    buf = bytearray(_entries(list(range(1, 6001))))
    buf[20 * 5000 : 20 * 5001] = bytes(20)
    assert consumequeue.written_entries(bytes(buf)) == 5000


def test_filler_entries_before_the_log_start_are_not_the_queues_min():
    buf = consumequeue.filler_entries(3) + _entries([4096, 4200, 9000])
    assert consumequeue.first_at_or_after(buf, 6, 0) == 0  # the log starts at 0: the broker counts fillers
    assert consumequeue.first_at_or_after(buf, 6, 4096) == 3
    assert consumequeue.first_at_or_after(buf, 6, 4201) == 5
    assert consumequeue.first_at_or_after(buf, 6, 10_000) == 6


def test_bounds_of_a_preallocated_two_file_queue(tmp_path):
    size = 20 * 10
    q = tmp_path / "consumequeue" / "T" / "0"
    q.mkdir(parents=True)
    (q / offset_name(0)).write_bytes(_entries(list(range(100, 1100, 100))))  # full: offsets 100..1000
    (q / offset_name(size)).write_bytes(_entries([1100, 1200, 1300]) + bytes(size - 60))
    paths = StorePaths(tmp_path)
    assert FileQueues(paths, size).bounds("T", 0) == (0, 13)
    assert FileQueues(paths, size, log_start=650).bounds("T", 0) == (6, 13)
    assert FileQueues(paths, size, log_start=1250).bounds("T", 0) == (10, 13)  # the first file is all below
