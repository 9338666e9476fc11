"""verify on a store whose lock another process holds warns as query does: its findings may be moving."""

from __future__ import annotations

import re
from pathlib import Path

from cli_helpers import CONF, fixture_copy, run
from lockholder import lock_held_elsewhere

WARNING = re.compile(r"^rmqtool: warning: process \d+ holds the store's lock \(a running broker\?\): "
                     r"answers may be moving$")


def test_verify_said_nothing_of_the_lock_holder(tmp_path: Path):
    store = fixture_copy(tmp_path)
    with lock_held_elsewhere(store / "lock"):
        out = run("verify", store, "--config", CONF)
        segment = run("verify", store / "commitlog" / f"{0:020d}", "--config", CONF)
    assert out.returncode == 0 and segment.returncode == 0
    assert WARNING.match(" ".join(out.stderr.split())), out.stderr
    assert WARNING.match(" ".join(segment.stderr.split())), segment.stderr
    free = run("verify", store, "--config", CONF)
    assert free.stderr == ""
