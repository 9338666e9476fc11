"""The topic-queue offset table (`QueueOffsets`): one rule for who takes a queue offset, asked three ways
(one record, a client batch, a vector for a bulk load) that agree."""

from __future__ import annotations

import numpy as np

from rmqtool.structures.commitlog import sysflag
from rmqtool.structures.consumequeue.offsets import QueueOffsets
from rmqtool.structures.consumequeue.queue import ConsumeQueue

PLAIN, PREPARED, COMMIT, ROLLBACK = (sysflag.TRANSACTION_NOT, sysflag.TRANSACTION_PREPARED,
                                     sysflag.TRANSACTION_COMMIT, sysflag.TRANSACTION_ROLLBACK)


def test_a_prepared_or_rolled_back_record_gets_0_and_does_not_advance():
    table = QueueOffsets({("A", 0): 7})
    assert [table.take(("A", 0), f) for f in (PREPARED, ROLLBACK, PLAIN, PREPARED, COMMIT)] == [0, 0, 7, 0, 8]
    assert table.take_batch(("A", 0), 5, PREPARED) == 0 and table.take_batch(("B", 0), 3, ROLLBACK) == 0
    assert dict(table) == {("A", 0): 9}
    assert table.next_for(("A", 0), PREPARED) == 0 and table.next_for(("A", 0), COMMIT) == 9


def test_one_record_a_batch_and_a_vector_agree():
    rng = np.random.default_rng(41)
    keys = [("A", 0), ("A", 1), ("B", 0)]
    ids = rng.integers(0, 3, 500)
    flags = rng.choice([PLAIN, PREPARED, COMMIT, ROLLBACK], 500) | sysflag.BORN_HOST_V6 * rng.integers(0, 2, 500)
    start = {("A", 0): 3, ("B", 0): 100}
    single, vector = QueueOffsets(start), QueueOffsets(start)
    one_by_one = [single.take(keys[k], int(f)) for k, f in zip(ids.tolist(), flags.tolist(), strict=True)]
    assert vector.take_vector(keys, ids, flags).tolist() == one_by_one
    assert dict(vector) == dict(single)
    batched = QueueOffsets(start)
    for k, key in enumerate(keys):
        n = int(np.count_nonzero((ids == k) & sysflag.enters_consume_queue(flags)))
        assert batched.take_batch(key, n, PLAIN) == start.get(key, 0)
    assert dict(batched) == dict(single)


def test_the_vector_continues_across_chunks_as_one_vector():
    keys = [("A", 0), ("B", 1)]
    ids, flags = np.array([0, 1, 0, 0, 1, 0]), np.array([0, 0, 4, 12, 8, 0])
    whole, chunked = QueueOffsets({("A", 0): 7}), QueueOffsets({("A", 0): 7})
    assert whole.take_vector(keys, ids, flags).tolist() == [7, 0, 0, 0, 1, 8]
    parts = [chunked.take_vector(keys, ids[a:a + 4], flags[a:a + 4]) for a in (0, 4)]
    assert np.concatenate(parts).tolist() == [7, 0, 0, 0, 1, 8] and dict(chunked) == dict(whole)
    assert dict(whole) == {("A", 0): 9, ("B", 1): 2}


def test_a_snapshot_restores_the_table():
    table = QueueOffsets({("A", 0): 1})
    mark = table.snapshot()
    table.take(("A", 0), PLAIN), table.take_batch(("B", 2), 4, PLAIN)
    table.restore(mark)
    assert dict(table) == {("A", 0): 1} and table.next_offset(("B", 2)) == 0


def test_the_table_of_a_stores_queues_continues_each_after_its_last_entry(tmp_path):
    written = ConsumeQueue(tmp_path / "A" / "0", "A", 0, 20 * 4)
    written.put(np.arange(0, 600, 100), np.full(6, 100), np.zeros(6, dtype=np.int64), 0)
    started_late = ConsumeQueue(tmp_path / "B" / "3", "B", 3, 20 * 4)
    started_late.put(np.array([700]), np.array([50]), np.array([0]), 9)
    empty = ConsumeQueue(tmp_path / "C" / "0", "C", 0, 20 * 4)
    table = QueueOffsets.of_queues({("A", 0): written, ("B", 3): started_late, ("C", 0): empty})
    assert dict(table) == {("A", 0): 6, ("B", 3): 10, ("C", 0): 0}
    assert table.take(("A", 0), COMMIT) == 6
    for cq in (written, started_late, empty):
        cq.close()
