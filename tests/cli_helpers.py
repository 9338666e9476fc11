"""Running the installed `rmqtool` as a user does, and the fixture store it is run on."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

RMQTOOL = str(Path(sys.executable).with_name("rmqtool"))
ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "store"
CONF = ROOT / "fixtures" / "broker.conf"


def run(*args: str, stdin: str | None = None, text: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([RMQTOOL, *map(str, args)], capture_output=True, text=text, timeout=120, input=stdin)


def fixture_copy(tmp_path: Path) -> Path:
    """A writable copy of the fixture store under `tmp_path`."""
    return writable_copy(FIXTURE, tmp_path / "store")


def writable_copy(src: Path, dst: Path) -> Path:
    """A copy of the store `src` (a read-only golden one too) at `dst` that tests may write to."""
    shutil.copytree(src, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst
