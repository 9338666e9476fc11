"""`diff A B`: replicas compared over the range both hold, on copies of the fixture store damaged one byte at a
time and on the real broker-written master/slave pairs of golden/ha (opened read-only, never written)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import FIXTURE, run, writable_copy

from rmqtool.engine.reader import open_reader
from rmqtool.errors import RmqError
from rmqtool.ops.diff import diff_stores
from rmqtool.structures import consumequeue, index
from rmqtool.structures.commitlog import compare as log_compare
from rmqtool.structures.commitlog import message
from rmqtool.structures.index import compare as index_compare
from rmqtool.structures.index.compare import match_pairs

SEG = 65536
FIXTURE_END = 151686  # the fixture's log: [0, 151686) in segments 0, 65536, 131072
BIG_RECORD = 1478  # a record of 9754 bytes (sysFlag 0): its body runs from BIG_RECORD + header_len(0)
BODY_BYTE = BIG_RECORD + message.header_len(0) + 5000
HA_COMMON = (196608, 324301)  # golden/ha sync: the slave's range, the master's from 0
AHEAD_MASTER_END = 252580  # golden/ha ahead: the master's 12 new records end there
AHEAD_DIVERGE = 249824  # where the ahead master's new records and the slave's sync-phase records start


@pytest.fixture(scope="module")
def ha(golden_basic: Path) -> Path:
    return golden_basic.parent / "ha"


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    return writable_copy(FIXTURE, tmp_path / "a"), writable_copy(FIXTURE, tmp_path / "b")


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x20
    path.write_bytes(bytes(data))


def _segment(root: Path, start: int) -> Path:
    return root / "commitlog" / f"{start:020d}"


def test_identical_copies_compare_identical_with_nothing_beyond(pair):
    doc = diff_stores(*pair)
    assert doc["identical"] is True
    assert doc["common"] == {"from": 0, "upto": FIXTURE_END, "bytes": FIXTURE_END, "identical": True,
                             "firstDifference": None}
    assert doc["onlyA"] == doc["onlyB"] == []
    q = doc["consumeQueues"]
    assert (q["different"], q["expected"], q["onlyA"], q["onlyB"]) == (0, 0, 0, 0)
    assert q["equal"] == sum(r["equal"] for r in q["perQueue"]) > 0
    assert doc["index"]["onlyA"] == doc["index"]["onlyB"] == 0
    assert doc["index"]["matched"] == doc["index"]["entriesA"] > 0


@pytest.mark.parametrize("chunk", [log_compare.CHUNK, 4096])
def test_one_flipped_body_byte_is_found_exactly_and_its_record_decoded_on_both_sides(pair, monkeypatch, chunk):
    monkeypatch.setattr(log_compare, "CHUNK", chunk)  # 4096: the byte lies chunks past the segment's start
    a, b = pair
    _flip(_segment(b, 0), BODY_BYTE)
    doc = diff_stores(a, b)
    common = doc["common"]
    assert (common["identical"], common["firstDifference"], common["divergesAt"]) == (False, BODY_BYTE, BIG_RECORD)
    ra, rb = common["records"]["a"], common["records"]["b"]
    assert ra["offset"] == rb["offset"] == BIG_RECORD
    assert "problem" not in ra
    assert rb["problem"].startswith("body CRC mismatch")
    assert ra["message"]["storeSize"] == rb["message"]["storeSize"] == 9754
    assert common["differingFields"] == ["body"]
    assert doc["identical"] is False


def test_a_flipped_header_byte_in_the_last_segment_is_found_exactly(pair):
    a, b = pair
    reader = open_reader(a)
    last = [int(o) for c in reader.scan(2 * SEG) if c.batch is not None for o in c.batch.offsets][3]
    at = last + message.QUEUE_ID_OFFSET + 3  # the queueId's low byte
    _flip(_segment(b, 2 * SEG), at - 2 * SEG)
    common = diff_stores(a, b)["common"]
    assert (common["firstDifference"], common["divergesAt"]) == (at, last)
    ma, mb = common["records"]["a"]["message"], common["records"]["b"]["message"]
    assert mb["queueId"] == ma["queueId"] ^ 0x20
    assert common["differingFields"] == ["queueId"]


def test_copy_whose_head_segment_was_removed_compares_equal_over_the_rest(pair):
    a, b = pair
    _segment(b, 0).unlink()  # a slave that never had the head (or cleaned it): its queues still point there
    doc = diff_stores(a, b)
    assert doc["common"] == {"from": SEG, "upto": FIXTURE_END, "bytes": FIXTURE_END - SEG, "identical": True,
                             "firstDifference": None}
    head = sum(1 for c in open_reader(a).scan(0, until=SEG) if c.batch is not None for o in c.batch.offsets
               if o < SEG)
    assert doc["onlyA"] == [{"from": 0, "upto": SEG, "bytes": SEG, "messages": head,
                             "firstStoreTimestamp": doc["onlyA"][0]["firstStoreTimestamp"],
                             "lastStoreTimestamp": doc["onlyA"][0]["lastStoreTimestamp"]}]
    assert doc["onlyB"] == []
    q = doc["consumeQueues"]
    assert (q["different"], q["expected"], q["onlyA"], q["onlyB"]) == (0, 0, 0, 0)  # its entries there are A's
    assert doc["identical"] is True


def test_copy_cut_short_leaves_the_other_a_tail_with_its_messages_and_times(pair):
    a, b = pair
    reader = open_reader(a)
    rows = [c.batch for c in reader.scan(2 * SEG) if c.batch is not None]
    offsets = [int(o) for r in rows for o in r.offsets]
    times = [int(t) for r in rows for t in r.cols["storeTimestamp"]]
    cut = offsets[-5]  # B loses the last five records, zeroed as an unwritten tail
    path = _segment(b, 2 * SEG)
    data = bytearray(path.read_bytes())
    data[cut - 2 * SEG :] = bytes(len(data) - (cut - 2 * SEG))
    path.write_bytes(bytes(data))
    doc = diff_stores(a, b)
    assert doc["common"]["upto"] == cut and doc["common"]["identical"] is True
    assert doc["onlyA"] == [{"from": cut, "upto": FIXTURE_END, "bytes": FIXTURE_END - cut, "messages": 5,
                             "firstStoreTimestamp": times[-5], "lastStoreTimestamp": times[-1]}]
    assert doc["onlyB"] == []
    # B's queues and index still point into the cut tail: outside the common range, not differences of it
    assert doc["index"]["onlyA"] == doc["index"]["onlyB"] == 0


def test_different_segment_sizes_are_refused(tmp_path, pair):
    other = tmp_path / "other" / "commitlog"
    other.mkdir(parents=True)
    for start in (0, 2 * SEG):
        (other / f"{start:020d}").write_bytes(bytes(2 * SEG))
    with pytest.raises(RmqError, match=r"segment sizes differ: .* has 65536-byte segments, .* 131072-byte"):
        diff_stores(pair[0], other.parent)


def test_a_segment_off_the_size_grid_is_refused(pair):
    a, b = pair
    _segment(b, 2 * SEG).rename(b / "commitlog" / f"{2 * SEG + 4096:020d}")
    with pytest.raises(RmqError, match=rf"starts at {2 * SEG + 4096}, not at a multiple of the segment size 65536"):
        diff_stores(a, b)


def test_a_changed_queue_entry_is_a_difference_not_a_filler(pair):
    a, b = pair
    queue = b / "consumequeue" / "OrderTopic" / "1" / f"{0:020d}"
    data = bytearray(queue.read_bytes())
    at = consumequeue.byte_of(7) + consumequeue.ENTRY.offset("tagsCode") + 7
    data[at] ^= 1
    queue.write_bytes(bytes(data))
    doc = diff_stores(a, b)
    assert doc["common"]["identical"] is True
    row = next(r for r in doc["consumeQueues"]["perQueue"] if (r["topic"], r["queueId"]) == ("OrderTopic", 1))
    assert (row["different"], row["expected"], row["firstDifferent"]) == (1, 0, 7)
    assert row["entries"]["a"]["tagsCode"] ^ row["entries"]["b"]["tagsCode"] == 1
    assert doc["consumeQueues"]["different"] == 1
    assert doc["identical"] is False


def test_a_changed_index_key_is_unmatched_on_both_sides(pair):
    a, b = pair
    path = sorted((b / "index").iterdir())[1]
    view = open_reader(a).index_file(a / "index" / path.name)
    phy = int(view.entries()[4]["phyOffset"])
    data = bytearray(path.read_bytes())
    data[index.entry_position(view.hash_slots, 5) + index.KEY_HASH_AT + 3] ^= 1  # entry 5's keyHash
    path.write_bytes(bytes(data))
    doc = diff_stores(a, b)
    assert doc["index"]["onlyA"] == doc["index"]["onlyB"] == 1
    assert doc["index"]["firstUnmatchedOffset"] == phy
    assert doc["identical"] is False


def test_sync_slave_lacking_the_masters_head_compares_equal_with_its_filler_entries(ha, monkeypatch):
    monkeypatch.setattr(index_compare, "INDEX_CHUNK", 7)  # the index streams meet across many small chunks
    doc = diff_stores(ha / "sync" / "master" / "store", ha / "sync" / "slave" / "store")
    assert doc["common"] == {"from": HA_COMMON[0], "upto": HA_COMMON[1], "bytes": HA_COMMON[1] - HA_COMMON[0],
                             "identical": True, "firstDifference": None}
    assert [(p["from"], p["upto"], p["messages"]) for p in doc["onlyA"]] == [(0, HA_COMMON[0], 796)]
    assert doc["onlyB"] == []
    rows = [(r["queueId"], r["equal"], r["expected"], r["different"], r["onlyA"], r["onlyB"])
            for r in doc["consumeQueues"]["perQueue"]]
    assert rows == [(0, 39, 199, 0, 0, 0), (1, 39, 199, 0, 0, 0), (2, 38, 199, 0, 0, 0), (3, 38, 199, 0, 0, 0)]
    assert (doc["index"]["entriesA"], doc["index"]["entriesB"], doc["index"]["matched"]) == (154, 154, 154)
    assert doc["identical"] is True


def test_ahead_slave_differs_first_at_the_masters_new_records_and_holds_a_tail_the_master_lacks(ha):
    doc = diff_stores(ha / "ahead" / "master" / "store", ha / "ahead" / "slave" / "store")
    common = doc["common"]
    assert (common["from"], common["upto"], common["identical"]) == (HA_COMMON[0], AHEAD_MASTER_END, False)
    # the records at 249824 are 218 bytes (master) and 256 (slave): totalSize 0x000000DA vs 0x00000100
    assert (common["divergesAt"], common["firstDifference"]) == (AHEAD_DIVERGE, AHEAD_DIVERGE + 2)
    ma, mb = common["records"]["a"]["message"], common["records"]["b"]["message"]
    assert (ma["commitLogOffset"], ma["storeSize"], mb["commitLogOffset"], mb["storeSize"]) == \
        (AHEAD_DIVERGE, 218, AHEAD_DIVERGE, 256)
    assert (ma["queueId"], ma["queueOffset"]) == (mb["queueId"], mb["queueOffset"]) == (0, 213)
    assert common["differingFields"] == ["storeSize", "bornTimestamp", "storeTimestamp", "bodyCRC", "body",
                                         "propertiesString"]
    assert [(p["from"], p["upto"], p["messages"]) for p in doc["onlyB"]] == [(AHEAD_MASTER_END, HA_COMMON[1], 94)]
    assert [(p["from"], p["upto"], p["messages"]) for p in doc["onlyA"]] == [(0, HA_COMMON[0], 796)]
    q = doc["consumeQueues"]
    assert (q["equal"], q["expected"], q["different"], q["onlyA"], q["onlyB"]) == (54, 796, 12, 0, 88)
    idx = doc["index"]
    assert (idx["matched"], idx["onlyA"], idx["onlyB"], idx["firstUnmatchedOffset"]) == (54, 12, 6, AHEAD_DIVERGE)


def _chunks(*parts: list[tuple[int, int]]):
    """(phyOffset, keyHash) chunks as the index files give them."""
    for part in parts:
        yield (np.array([p for p, _ in part], dtype=np.int64), np.array([k for _, k in part], dtype=np.int32))


def test_index_pairs_met_in_another_order_and_chunking_still_match():
    a = _chunks([(10, 1), (10, 2), (20, 3)], [(30, 4), (40, 5)])
    b = _chunks([(10, 2)], [(10, 1), (30, 4), (20, 3)], [(40, 5)])  # one key of 10 and 30/20 swapped in a chunk
    got = match_pairs(a, b)
    assert (got.entries_a, got.entries_b, got.matched, got.only_a, got.only_b) == (5, 5, 5, 0, 0)
    assert got.first_unmatched is None


def test_index_pair_met_after_its_stretch_was_compared_counts_out_of_order_and_unmatched():
    a = _chunks([(10, 1), (20, 2)], [(30, 3)])
    b = _chunks([(20, 2), (30, 3)], [(10, 1)])  # 10 comes after 20 and 30 were compared
    got = match_pairs(a, b)
    assert (got.out_of_order_a, got.out_of_order_b) == (0, 1)
    assert (got.matched, got.only_a, got.only_b, got.first_unmatched) == (2, 1, 1, 10)


def test_index_pairs_of_one_offset_differing_in_key_are_both_unmatched():
    got = match_pairs(_chunks([(5, 7), (1 << 40, 9)]), _chunks([(5, 8), (1 << 40, 9)]))  # stretch wider than 2 GiB
    assert (got.matched, got.only_a, got.only_b, got.first_unmatched) == (1, 1, 1, 5)


def test_empty_newest_segments_on_both_sides_leave_the_common_range_ending_with_the_shorter_log(pair):
    a, b = pair
    cut = [int(o) for c in open_reader(a).scan(2 * SEG) if c.batch is not None for o in c.batch.offsets][-3]
    path = _segment(b, 2 * SEG)
    data = bytearray(path.read_bytes())
    data[cut - 2 * SEG :] = bytes(len(data) - (cut - 2 * SEG))
    path.write_bytes(bytes(data))
    for root in (a, b):  # a newest segment created and not written yet: the extents end before it
        _segment(root, 3 * SEG).write_bytes(bytes(SEG))
    doc = diff_stores(a, b)
    assert (doc["a"]["upto"], doc["b"]["upto"]) == (FIXTURE_END, cut)
    assert doc["common"] == {"from": 0, "upto": cut, "bytes": cut, "identical": True, "firstDifference": None}
    assert [(p["from"], p["upto"], p["messages"]) for p in doc["onlyA"]] == [(cut, FIXTURE_END, 3)]


def test_two_controller_mode_replicas_show_their_epochs_and_the_brokers_consistent_point(tmp_path):
    from stores5x import make_5x_checkpoint_store, write_epoch_file

    a, b = tmp_path / "a", tmp_path / "b"
    for root, epochs in ((a, [(1, 0), (2, 1000), (5, 151686)]), (b, [(1, 0), (2, 1000), (3, 5000)])):
        make_5x_checkpoint_store(FIXTURE, root)
        write_epoch_file(root, epochs)
    out = run("diff", a, b, "--json")
    doc = json.loads(out.stdout)
    assert out.returncode == 0, out.stderr
    assert [e["epoch"] for e in doc["epochs"]["a"]["epochs"]] == [1, 2, 5]
    assert doc["epochs"]["b"]["epochs"][-1] == {"epoch": 3, "startOffset": 5000, "endOffset": None}
    assert doc["epochs"]["consistentPoint"] == 5000  # epoch 2 ends at B's next epoch, the earlier end
    assert doc["epochs"]["a"]["masterFlushedOffset"] == 151686
    table = run("diff", a, b)
    assert "the broker's consistent point: 5000" in " ".join(table.stdout.split())


def test_stores_without_epoch_files_show_no_epochs(golden_basic):
    out = run("diff", golden_basic / "store", golden_basic / "store", "--json")
    assert out.returncode == 0 and "epochs" not in json.loads(out.stdout)
