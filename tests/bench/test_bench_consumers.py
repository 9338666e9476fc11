"""`bench consumers` times `consumers --json` with many groups; a given store is read, never written."""

import json

from cli_helpers import fixture_copy, run

from rmqtool.structures.config import offsets, persist

KEYS = {"mode", "groups", "queues", "rows", "storeBytes", "seconds", "cpuSeconds", "tableSeconds", "tableCpuSeconds",
        "peakRssBytes"}


def test_bench_consumers_lists_every_group_on_every_queue_of_a_generated_store():
    out = run("bench", "consumers", "--groups", "20", "--queues", "4", "--messages", "2000", "--repeat", "1",
              "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert set(doc) == KEYS
    assert (doc["mode"], doc["groups"], doc["queues"], doc["rows"]) == ("consumers", 20, 4, 80)
    assert doc["storeBytes"] > 0 and doc["peakRssBytes"] > 0


def test_bench_consumers_writes_nothing_into_the_store_it_measures(tmp_path):
    """The offset table goes into a symlinked overlay: the store keeps every file, byte and mtime (its own
    offset table too, with no .bak beside it), and its group is not measured. Groups take the fixture's
    topics in turn: AuditLogTopic (1 queue), OrderTopic (4), PaymentTopic (2), so 6 groups list 2 x 7 rows."""
    store = fixture_copy(tmp_path)
    persist.save(offsets.offsets_path(store), {offsets.TABLE: {"OrderTopic@real-group": {0: 1, 1: 2}}})
    before = {p: (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes()) for p in store.rglob("*") if p.is_file()}
    out = run("bench", "consumers", store, "--groups", "6", "--repeat", "1", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["groups"], doc["rows"]) == (6, 14)
    assert {p: (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes()) for p in store.rglob("*")
            if p.is_file()} == before
    assert sorted(p.name for p in (store / "config").iterdir()) == ["consumerOffset.json"]
