"""recover --thorough stopped half way says how to finish, keeps `abort` so no writer takes the half
recovered store, and a second recover finishes it."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_helpers import RMQTOOL, RUN_GUARD_S, run

from rmqtool.bench.generate import generate_store

DEADLINE_S = RUN_GUARD_S


@pytest.fixture(scope="module")
def big_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("big") / "store"
    generate_store(root, 300_000, 200, segment_size=64 << 20)
    return root


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_recover_thorough_stopped_half_way_says_how_to_finish_and_a_second_run_does(big_store, tmp_path, sig):
    store = shutil.copytree(big_store, tmp_path / "store")
    shutil.rmtree(store / "index")  # the thorough recovery rebuilds it: seconds of work to interrupt
    proc = subprocess.Popen([RMQTOOL, "recover", str(store), "--thorough"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + DEADLINE_S
    while not (store / "abort").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "recovery ended before it could be stopped"
        time.sleep(0.002)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 128 + sig, err  # the shell's rule: 130 for SIGINT, 143 for SIGTERM
    assert "Traceback" not in err
    assert f"run `rmqtool recover {store}` again to finish" in err
    assert (store / "abort").exists()
    refused = run("append", store, "--topic", "T", "--body", "x")
    assert refused.returncode == 2 and "recover" in refused.stderr
    again = run("recover", store)
    assert again.returncode == 0, again.stderr
    checked = run("verify", store)
    assert checked.returncode == 0, checked.stdout + checked.stderr
