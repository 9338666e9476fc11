"""A consume-queue file cut short, where the store's other queue files have the queue file size: recovery
names it as cut short (its size and the store's) and the rebuild that mends it, not --config; with
--thorough it rebuilds that queue from the log and keeps the short file in lost/."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import CONF, fixture_copy, run
from damage import corrupt

from rmqtool.engine.config import StoreConfig
from rmqtool.ops.recovery import apply_recovery, plan_recovery
from rmqtool.ops.verify import verify_path

QUEUE_FILE = 4000  # mappedFileSizeConsumeQueue of fixtures/broker.conf (and of the fixture's queue files)
FILE = Path("consumequeue") / "OrderTopic" / "0" / f"{0:020d}"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return fixture_copy(tmp_path)


def refusal(store: Path) -> str:
    return (f"{store / FILE}: cut short: 1000 bytes, the store's queue files are {QUEUE_FILE} bytes; the broker "
            f"refuses to start on it: `rmqtool recover {store} --thorough` rebuilds its queue from the commitlog "
            "(the file is kept in lost/)")


@pytest.mark.parametrize("config", [None, CONF], ids=["files-only", "with-config"])
def test_queue_file_cut_short_is_refused_naming_its_size_and_the_rebuild_not_config(store, config):
    corrupt(store, FILE, "truncate", 1000)
    plan = plan_recovery(store, config, count_dispatch=False)
    assert plan.refused == refusal(store)


def test_cli_recover_of_a_cut_queue_file_exits_2_and_says_what_mends_it(store):
    corrupt(store, FILE, "truncate", 1000)
    out = run("recover", str(store))
    assert out.returncode == 2
    said = out.stdout + out.stderr
    assert refusal(store) in said and "--config" not in said
    assert (store / FILE).stat().st_size == 1000  # nothing changed


def test_thorough_recovery_rebuilds_the_queue_of_a_cut_file_and_keeps_it_in_lost(store):
    corrupt(store, FILE, "truncate", 1000)
    kept = (store / FILE).read_bytes()
    plan = plan_recovery(store, CONF, thorough=True)
    assert plan.refused is None
    assert (str(store / FILE), "rebuilt from the commitlog (entries missing or wrong)") in plan.deleted
    lost = apply_recovery(store, StoreConfig.from_file(CONF)[0], plan)
    assert (store / FILE).stat().st_size == QUEUE_FILE
    assert [p.read_bytes() for p in lost.rglob(FILE.name) if p.parent.name == "0"] == [kept]
    report = verify_path(store, CONF)
    assert report.problems == 0 and report.warnings == 0
