"""spark-export's folder appears whole or not at all: its tasks write it under a temporary name beside the target."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from cli_helpers import RMQTOOL, RUN_GUARD_S

from rmqtool.bench.generate import generate_store


@pytest.mark.spark
def test_a_spark_export_terminated_while_tasks_write_leaves_no_folder(tmp_path):
    store = generate_store(tmp_path / "store", 200_000, 100, segment_size=64 << 20).root
    out = tmp_path / "out"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.Popen([RMQTOOL, "spark-export", str(store), "--out", str(out), "--master", "local[2]"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tmp = tmp_path / f".out.rmqtool-tmp-{proc.pid}"
    deadline = time.monotonic() + RUN_GUARD_S
    while proc.poll() is None and time.monotonic() < deadline and not any(tmp.glob("*part-*")):
        time.sleep(0.02)
    assert proc.poll() is None and not out.exists(), "the export was not seen writing into its temporary folder"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=RUN_GUARD_S)
    assert proc.returncode == 143, err
    assert err == f"rmqtool: terminated: spark-export stopped; nothing was written to {out}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]
