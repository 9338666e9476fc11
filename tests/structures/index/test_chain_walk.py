"""One chain walk: `query --key` follows a damaged bucket exactly as far as verify calls its entries
reachable, and the compiled reach kernel verify runs agrees with the walk query runs on the same bytes."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import CONF, FIXTURE, fixture_copy

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import StoreReader
from rmqtool.ops.query import StoreQuery
from rmqtool.ops.verify import verify_path
from rmqtool.structures import index
from rmqtool.structures.index.build import build_files

SLOTS, ENTRIES = 64, 256  # fixtures/broker.conf
NEWEST = Path("index") / "20231114221320002"  # indexCount 219: entries 1..218 are written
ENTRIES_AT = index.HEADER_LEN + SLOTS * index.SLOT_LEN
# Slot 18 of the newest file, newest entry first, and the (topic, key) of its entries.
CHAIN = [213, 211, 195, 179, 163, 150, 147, 134, 118, 102, 100, 86, 71, 67, 55, 39, 23, 8]
CHAIN_KEYS = [("AuditLogTopic", "C000020112340BADF00D0000000001A0"), ("OrderTopic", "中文键"),
              ("OrderTopic", "C000020112340BADF00D00000000017A"), ("OrderTopic", "order-351"),
              ("AuditLogTopic", "C000020112340BADF00D00000000014C")]
DAMAGES = {  # entry number, field, value; and the entries of CHAIN a lookup still reaches
    "loop": ([(118, index.PREV_INDEX_AT, 195)], CHAIN[:9]),  # 118 links forward to 195: a cycle
    "past-written": ([(118, index.PREV_INDEX_AT, 219)], CHAIN[:9]),  # to entry 219, past indexCount-1
    "negative-time": ([(134, index.TIME_DIFF_AT, -1)], CHAIN[:7]),  # the broker stops before 134
}


def _put(path: Path, number: int, field: int, value: int) -> None:
    with open(path, "r+b") as f:
        f.seek(ENTRIES_AT + number * index.ENTRY_LEN + field)
        f.write(struct.pack(">i", value))


def _query(root: Path) -> StoreQuery:
    return StoreQuery(StoreReader(root, StoreConfig.from_file(CONF)[0]))


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_query_and_verify_agree_on_damaged_chain(tmp_path, damage):
    store = fixture_copy(tmp_path)
    path = store / NEWEST
    buf = path.read_bytes()
    entries = index.decode_entries(buf, SLOTS, 219)
    number_of = {(int(e["keyHash"]), int(e["phyOffset"])): n for n, e in enumerate(entries) if n}
    if damage == "past-written":  # stale bytes past indexCount: a copy of entry 102, the chain's next
        with open(path, "r+b") as f:
            f.seek(ENTRIES_AT + 219 * index.ENTRY_LEN)
            f.write(buf[ENTRIES_AT + 102 * index.ENTRY_LEN : ENTRIES_AT + 103 * index.ENTRY_LEN])
    edits, reached = DAMAGES[damage]
    for number, field, value in edits:
        _put(path, number, field, value)

    q = _query(store)
    walked: list[int] = []
    for topic, key in CHAIN_KEYS:
        h = index.key_hash(index.index_key(topic, key))
        hits = q.index_offsets(topic, key, max_hits=1000)
        assert len(hits) == len(set(hits)), (key, hits)  # a cycle is walked once
        walked += [number_of[(h, p)] for p in hits if (h, p) in number_of]
    q.close()
    report = verify_path(store, CONF)
    unreachable = [(f.offset - ENTRIES_AT) // index.ENTRY_LEN for f in report.findings
                   if f.kind == "index-entry-unreachable" and f.file == str(path)]
    assert sorted(walked) == sorted(reached) == sorted(set(CHAIN) - set(unreachable))
    assert unreachable == sorted(set(CHAIN) - set(reached))

    # The key's older entries, in the older files, still answer (a cycle must not use up --max 64).
    h = index.key_hash(index.index_key("OrderTopic", "中文键"))
    before = _query(FIXTURE).index_offsets("OrderTopic", "中文键")
    older = [p for p in before if (h, p) not in number_of]
    want = [int(entries["phyOffset"][n]) for n in reached if int(entries["keyHash"][n]) == h] + older
    q = _query(store)
    assert q.index_offsets("OrderTopic", "中文键") == want
    q.close()


def _damaged_file() -> tuple[np.ndarray, int, int]:
    """One 8-slot file of 40 entries (numbers 1..40, indexCount 41), damaged in every way a chain
    can be: forward link, cycle, link past the written entries, negative timeDiff, slot past them."""
    rng = np.random.default_rng(7)
    hashes = rng.integers(0, 2**31 - 1, 40, dtype=np.int64)
    phys = np.arange(40, dtype=np.int64) * 100
    times = 1_700_000_000_000 + np.arange(40, dtype=np.int64) * 1500
    buf = np.frombuffer(bytearray(build_files(hashes, phys, times, 8, 64)[0]), dtype=np.uint8).copy()
    entries_at = index.HEADER_LEN + 8 * index.SLOT_LEN

    def put(at: int, value: int) -> None:
        buf[at : at + 4] = np.frombuffer(struct.pack(">i", value), dtype=np.uint8)

    put(entries_at + 30 * index.ENTRY_LEN + index.PREV_INDEX_AT, 35)  # forward
    put(entries_at + 25 * index.ENTRY_LEN + index.PREV_INDEX_AT, 25)  # itself
    put(entries_at + 20 * index.ENTRY_LEN + index.PREV_INDEX_AT, 41)  # past indexCount - 1
    put(entries_at + 17 * index.ENTRY_LEN + index.TIME_DIFF_AT, -3)
    put(index.HEADER_LEN + 3 * index.SLOT_LEN, 41)  # a slot naming the unwritten entry
    put(entries_at + 41 * index.ENTRY_LEN + index.PREV_INDEX_AT, 2)  # ... whose bytes link somewhere
    return buf, 41, 1_700_000_000_000


def test_reach_kernel_and_walk_agree_on_damaged_bytes():
    from rmqtool.structures.index import chain

    buf, bound, begin_ts = _damaged_file()
    read = chain.buffer_reader(buf.tobytes())
    walked = {link.number for s in range(8) for link in chain.walk(read, 8, bound, begin_ts, s)}
    reach = chain.reachable(buf, 8, bound, begin_ts, chunk=7)
    assert set(np.flatnonzero(reach).tolist()) == walked
    assert 17 not in walked and 41 not in walked and len(walked) < 40  # the damage cut chains
    # A lookup's begin time ends a chain after the first entry timed before it, in both.
    begin = begin_ts + 30_000
    walked = {link.number for s in range(8) for link in chain.walk(read, 8, bound, begin_ts, s, begin)}
    assert set(np.flatnonzero(chain.reachable(buf, 8, bound, begin_ts, begin)).tolist()) == walked


def test_chain_lengths_and_walk_agree_on_damaged_bytes():
    """decode's chain lengths are the walk's: every damage ends a chain where a lookup stops."""
    from rmqtool.structures.index import chain

    buf, bound, begin_ts = _damaged_file()
    read = chain.buffer_reader(buf.tobytes())
    slots = index.decode_slots(buf, 8)
    heads = [s for s in range(8) if 1 <= slots[s] < bound]
    for begin in (0, begin_ts + 30_000):
        walked = [len(list(chain.walk(read, 8, bound, begin_ts, s, begin))) for s in heads]
        assert chain.lengths(buf, 8, bound, begin_ts, begin, chunk=7).tolist() == walked
    assert sum(walked) < 40 and 3 not in heads  # the damage cut chains; slot 3 names no written entry
