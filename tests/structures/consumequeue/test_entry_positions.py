"""Where a consume-queue entry sits (entry k at byte k x 20 of its queue), the store's default queue file
size, the filler a queue that starts past 0 is pre-filled with, and a finding about one entry."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from rmqtool.engine.config import StoreConfig
from rmqtool.files.paths import offset_name
from rmqtool.report import CONSUMEQUEUE, ERROR, Finding
from rmqtool.structures import consumequeue
from rmqtool.structures.consumequeue import rules
from rmqtool.structures.consumequeue.queue import ConsumeQueue
from rmqtool.structures.consumequeue.recognize import queue_file_refusal

FILLER = struct.pack(">qiq", 0, 2147483647, 0)  # (0, Integer.MAX_VALUE, 0), as the broker pre-fills


def test_byte_of_entry_in_the_second_default_file_is_off():
    assert consumequeue.byte_of(300_000) == 6_000_000
    assert consumequeue.byte_of(np.array([0, 1, 7], dtype=np.int64)).tolist() == [0, 20, 140]


def test_queue_offset_of_a_byte_inside_an_entry_is_not_its_own():
    assert consumequeue.queue_offset_of(6_000_019) == 300_000
    assert consumequeue.queue_offset_of(6_000_020) == 300_001
    assert consumequeue.queue_offset_of(40) == 2


def test_whole_entries_counts_a_partial_entry():
    assert [consumequeue.whole_entries(n) for n in (0, 19, 20, 59, 60)] == [0, 0, 1, 2, 3]


def test_round_up_to_entry_leaves_an_entry_ending_in_zeros_half_cut():
    assert [consumequeue.round_up_to_entry(n) for n in (0, 1, 20, 41, 60)] == [0, 20, 20, 60, 60]


def test_file_start_of_an_entry_on_a_file_boundary_is_the_previous_file():
    assert [consumequeue.file_start_of(q, 400) for q in (0, 19, 20, 39, 45)] == [0, 0, 400, 400, 800]
    assert consumequeue.file_start_of(300_000, consumequeue.DEFAULT_FILE_SIZE) == 6_000_000


def test_entry_at_reads_a_neighbour_of_the_entry_asked_for():
    buf = consumequeue.encode_entries([100, 250, 400], [150, 150, 90], [7, -3, 0])
    assert consumequeue.entry_at(buf, 1) == (250, 150, -3)
    assert consumequeue.entry_at(memoryview(buf), 2) == (400, 90, 0)


def test_default_queue_file_size_is_not_300000_entries():
    assert consumequeue.DEFAULT_FILE_SIZE == 6_000_000
    assert StoreConfig().mappedFileSizeConsumeQueue == 6_000_000


def test_filler_entries_are_not_the_ones_the_broker_pre_fills_with():
    assert consumequeue.filler_entries(2) == FILLER * 2
    assert consumequeue.filler_entries(0) == b""
    assert queue_file_refusal(consumequeue.filler_entries(1), 400) is None


def test_queue_starting_past_zero_is_not_pre_filled_with_fillers(tmp_path: Path):
    cq = ConsumeQueue(tmp_path, "T", 0, 400)
    cq.put(np.array([1000, 1200]), np.array([200, 90]), np.array([5, 6]), first_queue_offset=23)
    cq.close()
    data = (tmp_path / offset_name(400)).read_bytes()
    assert data[:60] == consumequeue.filler_entries(3)
    assert data[60:100] == consumequeue.encode_entries([1000, 1200], [200, 90], [5, 6])


def test_entry_finding_names_the_wrong_byte_or_length():
    found = rules.entry_finding("cq/T/0", 5, "entry 5 points nowhere", "entry-without-record")
    assert found == Finding("cq/T/0", 100, "entry 5 points nowhere", 20, ERROR, CONSUMEQUEUE, "entry-without-record")
