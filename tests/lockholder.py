"""A second process that holds a store's lock the way a running broker does (fcntl on byte 0)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def lock_held_elsewhere(lock_file: Path) -> Iterator[None]:
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, os, signal
        fd = os.open({str(lock_file)!r}, os.O_RDWR)
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        print("held", flush=True)
        signal.pause()  # held until the test kills it, however long the test takes
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()
