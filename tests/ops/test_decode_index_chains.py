"""`decode index` measures each bucket's chain by the lookups' own walk (`chain.lengths`): a damaged
link ends a chain where `query --key` stops following it, instead of being counted round and round."""

from __future__ import annotations

import struct
from pathlib import Path

from cli_helpers import CONF, FIXTURE, fixture_copy

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import StoreReader
from rmqtool.ops.views import index_report
from rmqtool.structures import index

SLOTS = 64  # fixtures/broker.conf
NEWEST = Path("index") / "20231114221320002"  # slot 18 holds the longest chain: 18 entries, newest 213


def _slots_report(root: Path) -> dict:
    return index_report(StoreReader(root, StoreConfig.from_file(CONF)[0]), root / NEWEST, False)["slots"]


def test_looping_chain_counted_as_far_as_lookups_follow_it(tmp_path):
    assert _slots_report(FIXTURE) == {"hashSlotNum": 64, "indexNum": 256, "used": 62, "fill": 0.9688, "entries": 218,
                                      "longestChain": 18, "meanChain": 3.516}  # 218 entries in 62 chains
    store = fixture_copy(tmp_path)
    with open(store / NEWEST, "r+b") as f:  # entry 118, 9th of slot 18's chain, links forward to 195: a loop
        f.seek(index.entry_position(SLOTS, 118) + index.PREV_INDEX_AT)
        f.write(struct.pack(">i", 195))
    report = _slots_report(store)
    # Slot 18's walk stops at the forward link after 9 entries (213 .. 118), as a lookup does; the
    # longest chain left is another slot's 12 (it was counted 219 times round the loop).
    assert (report["longestChain"], report["meanChain"]) == (12, round((218 - 18 + 9) / 62, 3))
