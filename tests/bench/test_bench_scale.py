"""`bench scale` measures each command in a fresh process: its peak RSS must be the command's own."""

from __future__ import annotations

import numpy as np

from rmqtool.bench.scale import run_process


def test_a_commands_peak_rss_is_its_own_not_the_benchmarks():
    """A child's ru_maxrss keeps the high-water mark of the process it was forked from: every command
    of a benchmark that held 400 MiB once reported 400 MiB."""
    held = np.ones(400 << 20, dtype=np.uint8)  # touched: resident in this process
    small = run_process(["decode", "msgid", "C633640700002A9F0000000000000000"])
    assert small["exitCode"] == 0
    assert 10 << 20 < small["peakRssBytes"] < 200 << 20
    assert held.sum() == 400 << 20


def test_a_failing_command_reports_its_exit_code():
    assert run_process(["decode", "msgid", "not-a-msgid"])["exitCode"] == 2


def test_the_scale_store_puts_message_n_where_the_lookups_expect_it(tmp_path):
    """Lookups count an answer as wrong unless message N is in topic N mod 4, queue (N div 4) mod 8 at
    queue offset N div 32 with key kN, found again by msgId and key: a store built otherwise would
    make every lookup 'wrong' (or, worse, every check vacuous)."""
    from pathlib import Path

    from rmqtool.bench.scale import build, lookups

    conf = Path(__file__).resolve().parents[2] / "fixtures" / "broker.conf"
    store = build(tmp_path / "s", conf, 0.002, 100, 2)
    assert 0.002 * (1 << 30) <= store.data_bytes < 0.002 * (1 << 30) + 65536
    rows, wrong = lookups(store, 3)
    assert wrong == 0
    assert [r["lookup"] for r in rows] == ["--queue-offset", "--msg-id", "--key", "--time"]
    assert all(r["lookups"] == 3 for r in rows)
