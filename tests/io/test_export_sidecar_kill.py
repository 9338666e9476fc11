"""`export --out X.jsonl` wrote the rows' atomic rename first and the `.geometry.json` sidecar after it: a kill
between left a JSONL without its geometry, which `import` then reads with the default segment size. The sidecar
is now renamed into place first: at every moment the JSONL is there, its geometry is too."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
from cli_helpers import FIXTURE, RUN_GUARD_S, run

# `rmqtool export` killed (SIGKILL, nothing cleaned up) at its Nth rename into place
KILLED_AT_RENAME = """
import os, signal, sys
from rmqtool.cli.app import main
real, count = os.replace, [0]
def replace(src, dst):
    count[0] += 1
    if count[0] == int(sys.argv[1]):
        os.kill(os.getpid(), signal.SIGKILL)
    real(src, dst)
os.replace = replace
main(sys.argv[2:])
"""
GEOMETRY = {"mappedFileSizeCommitLog": 65536, "mappedFileSizeConsumeQueue": 4000, "maxHashSlotNum": 64,
            "maxIndexNum": 256}


@pytest.mark.parametrize(("rename", "left"), [(1, []), (2, ["export.jsonl.geometry.json"])])
def test_export_killed_between_its_renames_never_leaves_a_jsonl_without_its_geometry(tmp_path, rename, left):
    out = tmp_path / "export.jsonl"
    proc = subprocess.run([sys.executable, "-c", KILLED_AT_RENAME, str(rename), "export", str(FIXTURE), "--out",
                           str(out)], capture_output=True, text=True, timeout=RUN_GUARD_S)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if ".rmqtool-tmp-" not in p.name) == left


def test_export_replaces_a_stale_sidecar_of_an_older_export(tmp_path):
    out = tmp_path / "export.jsonl"
    (tmp_path / "export.jsonl.geometry.json").write_text('{"mappedFileSizeCommitLog": 1024}')
    assert run("export", FIXTURE, "--out", out).returncode == 0
    doc = json.loads((tmp_path / "export.jsonl.geometry.json").read_text())
    assert {k: doc[k] for k in GEOMETRY} == GEOMETRY
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export.jsonl", "export.jsonl.geometry.json"]
