"""A deleted checkpoint was "healthy": verify and doctor found nothing, though after a crash the broker's
recovery reads its times as 0 (it walks the log from its first segment and drops every index file). A log
with records and no checkpoint is an error of the checkpoint, mended by reset-checkpoint; a log without
records needs none."""

from __future__ import annotations

import json

from cli_helpers import CONF, fixture_copy, run
from damage import corrupt

from rmqtool.engine.reader import open_reader
from rmqtool.ops.verify import verify_path
from rmqtool.report import CHECKPOINT, ERROR
from rmqtool.structures.checkpoint.check import MISSING
from rmqtool.structures.checkpoint.structure import CHECKPOINT as STRUCTURE
from rmqtool.structures.structure import RESET_CHECKPOINT

NEWEST = 1700000002933  # the store time of the fixture's newest record
REASON = ("the checkpoint file is missing: the broker's crash recovery has no start point (after a crash it walks "
          "the whole log and drops every index file)")


def test_a_deleted_checkpoint_is_an_error_that_reset_checkpoint_mends(tmp_path):
    store = fixture_copy(tmp_path)
    corrupt(store, "checkpoint", "delete")
    report = verify_path(store, CONF)
    assert [(f.file, f.offset, f.bytes, f.severity, f.structure, f.kind, f.reason) for f in report.findings] == [
        (str(store / "checkpoint"), 0, 0, ERROR, CHECKPOINT, MISSING, REASON)]
    repairs = STRUCTURE.repairs(report, open_reader(store, CONF))
    assert [(r.action, r.target, r.kinds) for r in repairs] == [
        (RESET_CHECKPOINT, str(store / "checkpoint"), (MISSING,))]
    out = run("verify", store, "--config", CONF, "--json")
    assert (out.returncode, json.loads(out.stdout)["byKind"]) == (1, {MISSING: 1})
    assert out.stderr == (f"verify found 1 problems, 0 warnings that `rmqtool doctor {store} --apply` mends "
                          "(reset-checkpoint)\n")


def test_doctor_plans_reset_checkpoint_for_a_deleted_checkpoint_and_writes_its_times_from_the_newest_record(
        tmp_path):
    store = fixture_copy(tmp_path)
    corrupt(store, "checkpoint", "delete")
    plan = json.loads(run("doctor", store, "--config", CONF, "--json").stdout)
    assert (plan["status"], plan["byKind"]) == ("plan", {MISSING: 1})
    assert [(s["action"], s["kinds"], s["mends"]) for s in plan["steps"]] == [(RESET_CHECKPOINT, [MISSING], 1)]
    done = run("doctor", store, "--config", CONF, "--apply", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["after"] == {"problems": 0, "warnings": 0, "byKind": {}}
    cp = open_reader(store, CONF).checkpoint()
    # every time the newest record's: the recovery that wrote it made everything up to it durable
    assert (cp.physicMsgTimestamp, cp.logicsMsgTimestamp, cp.indexMsgTimestamp) == (NEWEST, NEWEST, NEWEST)


def test_a_store_without_records_needs_no_checkpoint(tmp_path):
    """No segment at all, or segments with no record: there is nothing for a recovery to start from."""
    empty = tmp_path / "empty"
    (empty / "commitlog").mkdir(parents=True)
    zeros = tmp_path / "zeros"
    (zeros / "commitlog").mkdir(parents=True)
    (zeros / "commitlog" / f"{0:020d}").write_bytes(bytes(65536))
    for root in (empty, zeros):
        report = verify_path(root, CONF)
        assert not [f for f in report.findings if f.structure == CHECKPOINT], report.findings
        assert report.problems == 0
        out = run("doctor", root, "--config", CONF, "--json")
        assert (out.returncode, json.loads(out.stdout)["status"]) == (0, "healthy"), out.stdout + out.stderr
        assert not (root / "checkpoint").exists()

