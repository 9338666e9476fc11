"""`bench replicas` times diff and hash against reading the same bytes once, without writing into STORE."""

from __future__ import annotations

import json

from cli_helpers import FIXTURE, run

FIXTURE_END = 151686


def test_bench_replicas_reports_both_rates_against_the_floor_and_leaves_the_store_alone():
    before = {p: p.read_bytes() for p in FIXTURE.rglob("*") if p.is_file()}
    out = run("bench", "replicas", str(FIXTURE), "--repeat", "1", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["mode"], doc["bytes"], doc["segments"], doc["copy"]) == ("replicas", FIXTURE_END, 3, "temp copy")
    for part in ("diff", "hash"):
        assert set(doc[part]) == {"seconds", "peakRssBytes", "gbPerSecond", "readOnceSeconds", "toReadOnce"}
        assert doc[part]["seconds"] > 0 and doc[part]["peakRssBytes"] > 0
    assert {p: p.read_bytes() for p in FIXTURE.rglob("*") if p.is_file()} == before
