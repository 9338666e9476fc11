"""The committed completion scripts are what the typer app generates now, and they complete."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RMQTOOL = str(Path(sys.executable).with_name("rmqtool"))


def test_completion_scripts_are_current():
    out = subprocess.run([sys.executable, str(ROOT / "completions" / "generate.py"), "--check"], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    for name in ("rmqtool.bash", "_rmqtool", "rmqtool.fish"):
        assert "_RMQTOOL_COMPLETE" in (ROOT / "completions" / name).read_text()


def test_bash_completion_offers_subcommands():
    env = {**os.environ, "_RMQTOOL_COMPLETE": "complete_bash", "COMP_WORDS": "rmqtool decode co", "COMP_CWORD": "2"}
    out = subprocess.run([RMQTOOL], capture_output=True, text=True, env=env)
    assert out.stdout.split() == ["commitlog", "consumequeue", "config"]
