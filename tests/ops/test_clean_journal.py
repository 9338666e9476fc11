"""`clean` removes its expired files as one step: the list is recorded first, so a clean killed half way
is finished by the next writer or by `recover`, never left half done."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from cli_helpers import CONF, fixture_copy, run

from rmqtool.engine.journal import DELETIONS_NAME


@pytest.mark.parametrize("finisher", [("append", "--topic", "T", "--body", "x"), ("recover",)])
def test_a_clean_killed_half_way_is_finished_by_the_next_writer_or_recover(tmp_path, finisher):
    store = fixture_copy(tmp_path)
    expired = sorted((store / "commitlog").iterdir())[:2]
    kept = shutil.copy(expired[1], tmp_path / "kept")  # the killed clean had removed the first one already
    expired[0].unlink()
    (store / DELETIONS_NAME).write_text(json.dumps([str(p) for p in expired]))
    assert expired[1].exists() and kept
    done = run(finisher[0], store, "--config", CONF, *finisher[1:])
    assert done.returncode == 0, done.stderr
    assert not expired[1].exists() and not (store / DELETIONS_NAME).exists()


def test_clean_removes_what_it_lists_and_leaves_no_journal_behind(tmp_path):
    store = fixture_copy(tmp_path)
    old = sorted((store / "commitlog").iterdir())[:2]
    for p in old:
        os.utime(p, (1, 1))  # expired long ago
    done = run("clean", store, "--config", CONF, "--reserved-hours", "1")
    assert done.returncode == 0, done.stderr
    assert not any(p.exists() for p in old)
    assert not (store / DELETIONS_NAME).exists()
