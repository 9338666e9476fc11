"""Facts a command takes from the store (the broker address, the geometry) come from the store."""

from __future__ import annotations

import json

from cli_helpers import fixture_copy, run
from damage import SEG, corrupt

from rmqtool.structures.commitlog import msgid
from rmqtool.structures.commitlog.hosts import parse_host


def test_append_after_recover_of_a_zeroed_last_segment_stamps_the_newest_records_host(tmp_path):
    store = fixture_copy(tmp_path)
    corrupt(store, f"commitlog/{2 * SEG:020d}", "zero", 0, SEG)
    assert run("recover", store).returncode == 0
    out = run("append", store, "--topic", "OrderTopic", "--body", "hi", "--json")
    assert out.returncode == 0, out.stderr
    put = json.loads(out.stdout)
    assert put["wroteOffset"] == 2 * SEG
    assert msgid.decode(put["msgId"]) == (parse_host("198.51.100.7:10911"), 2 * SEG)
