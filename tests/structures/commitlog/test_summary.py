"""`info`'s commitlog end is the broker's max physical offset (the end its recovery walk finds), where it ended at
the last record before: on a store whose last segment is empty the two differed (1244751 against 1245184)."""

from __future__ import annotations

import json

from cli_helpers import CONF, fixture_copy, run
from damage import SEG

from rmqtool.engine.config import StoreConfig
from rmqtool.ops.recovery import plan_recovery


def info_end(store) -> int:
    return json.loads(run("info", store, "--config", CONF, "--json").stdout)["commitlog"]["endOffset"]


def test_info_end_of_a_store_whose_last_segment_is_empty_is_the_brokers_max_offset(tmp_path):
    store = fixture_copy(tmp_path)
    last = store / "commitlog" / f"{2 * SEG:020d}"
    last.write_bytes(bytes(last.stat().st_size))  # segment 1 ends with its end marker, segment 2 holds nothing
    assert info_end(store) == plan_recovery(store, StoreConfig.from_file(CONF)[0]).end == 2 * SEG


def test_info_end_without_an_empty_segment_after_is_where_the_last_record_ends(tmp_path):
    store = fixture_copy(tmp_path)
    assert info_end(store) == plan_recovery(store, StoreConfig.from_file(CONF)[0]).end == 151686
    (store / "commitlog" / f"{2 * SEG:020d}").unlink()  # the marker ends the last segment: the broker stops at it
    end = info_end(store)
    assert end == plan_recovery(store, StoreConfig.from_file(CONF)[0]).end and SEG < end < 2 * SEG
