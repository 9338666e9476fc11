"""The load planner (plain numpy) against appends placed one by one."""

from __future__ import annotations

import numpy as np
import pytest

from rmqtool.load.planner import NO_QUEUE, LoadPlanner, assign_queues, plan_layout
from rmqtool.structures.commitlog.message import BLANK_MARKER_LEN
from rmqtool.structures.consumequeue.offsets import QueueOffsets


def _one_by_one(lengths, start, segment):
    pos, out, blanks = start, [], []
    for n in lengths:
        left = segment - pos % segment
        if n + BLANK_MARKER_LEN > left:
            blanks.append(pos)
            pos += left
        out.append(pos)
        pos += n
    return out, blanks, pos


@pytest.mark.parametrize("start", [0, 100, 4000, 4096 - 8, 4096 * 3 + 17])
def test_layout_rolls_where_a_record_would_leave_less_than_a_blank_marker(start):
    rng = np.random.default_rng(start)
    lengths = rng.integers(20, 900, 2000)
    layout = plan_layout(lengths, start, 4096)
    want, blanks, end = _one_by_one(lengths.tolist(), start, 4096)
    assert layout.physical_offset.tolist() == want
    assert layout.blanks.tolist() == blanks and len(blanks) > 100
    assert layout.end == end


def test_layout_of_a_record_that_exactly_leaves_a_blank_marker_stays_in_its_segment():
    layout = plan_layout(np.array([4096 - 8, 10]), 0, 4096)
    assert layout.physical_offset.tolist() == [0, 4096]
    assert layout.blanks.tolist() == [4088]
    layout = plan_layout(np.array([100, 4096 - 8]), 0, 4096)
    assert layout.physical_offset.tolist() == [0, 4096] and layout.blanks.tolist() == [100]


def test_round_robin_queues_rotate_per_topic_across_chunks():
    pick: dict[int, int] = {}
    q1 = assign_queues(np.array([0, 1, 0, 0]), np.array([NO_QUEUE, NO_QUEUE, 5, NO_QUEUE]), pick, 4)
    q2 = assign_queues(np.array([0, 0, 0]), np.full(3, NO_QUEUE), pick, 4)
    assert q1.tolist() == [0, 0, 5, 1] and q2.tolist() == [2, 3, 0]


def test_planning_in_chunks_equals_planning_at_once():
    rng = np.random.default_rng(3)
    lengths = rng.integers(50, 700, 3000)
    topics = rng.integers(0, 3, 3000)
    queue = np.where(rng.random(3000) < 0.3, rng.integers(0, 2, 3000), NO_QUEUE)
    names = ["A", "B", "C"]
    whole = LoadPlanner(100, 8192, 4, QueueOffsets({("A", 1): 10})).plan(names, topics, queue, lengths)
    chunked = LoadPlanner(100, 8192, 4, QueueOffsets({("A", 1): 10}))
    parts = [chunked.plan(names, topics[a:a + 700], queue[a:a + 700], lengths[a:a + 700]) for a in range(0, 3000, 700)]
    assert np.concatenate([p.physical_offset for p in parts]).tolist() == whole.physical_offset.tolist()
    assert np.concatenate([p.queue_offset for p in parts]).tolist() == whole.queue_offset.tolist()
    assert np.concatenate([p.queue_id for p in parts]).tolist() == whole.queue_id.tolist()
    assert [p.row_base for p in parts] == list(range(0, 3000, 700))
    assert chunked.segments()[0] == 0 and chunked.end == int(whole.physical_offset[-1] + lengths[-1])
