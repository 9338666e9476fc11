"""`bench replicas`: `diff A B` of two identical stores and `hash A`, each in a fresh process, against reading the
same commitlog bytes once (the files read into a reused page-aligned buffer, as `dd` does): GB/s of commitlog, the
ratio to that floor, and peak RSS.

STORE and COPY are read, never written; without COPY a copy of STORE is made in a temp dir (and removed), and
without STORE a store is generated there. Give COPY on a machine where the page cache holds both stores: the
copy is a second set of pages, as a slave's files are.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rmqtool.bench.readpath import bench_store
from rmqtool.bench.scale import run_process
from rmqtool.errors import RmqError
from rmqtool.ops.hashing import log_extent

# The floor: a process that reads the commitlog bytes [from, upto) of each `root:from:upto` once, file by file,
# into one reused 8 MiB buffer (an anonymous map: page-aligned, which the kernel copies into fastest), as `dd` does.
# It imports nothing of rmqtool: its time is the interpreter's start and the reads.
_READ_ONCE = """import mmap, os, sys
view = memoryview(mmap.mmap(-1, 8 << 20))
for spec in sys.argv[1:]:
    root, lo, hi = spec.rsplit(":", 2)
    folder = os.path.join(root, "commitlog")
    for name in sorted(n for n in os.listdir(folder) if len(n) == 20 and n.isdigit()):
        fd = os.open(os.path.join(folder, name), os.O_RDONLY)
        at, end = max(int(lo) - int(name), 0), min(int(hi) - int(name), os.fstat(fd).st_size)
        while at < end:
            got = os.preadv(fd, [view[: min(len(view), end - at)]], at)
            if not got:
                break
            at += got
        os.close(fd)
"""


def _read_seconds(specs: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", _READ_ONCE, *specs], check=True)
    return time.perf_counter() - start


def _timed(args: list[str], repeat: int, want_exit: int) -> dict:
    """The fastest of `repeat` fresh processes of `rmqtool ARGS` (peak RSS: the largest)."""
    runs = [run_process(args) for _ in range(repeat)]
    for r in runs:
        if r["exitCode"] != want_exit:
            raise RmqError(f"bench replicas: `rmqtool {' '.join(args)}` exited {r['exitCode']}")
    best = min(runs, key=lambda r: r["seconds"])
    return {"seconds": best["seconds"], "peakRssBytes": max(r["peakRssBytes"] for r in runs)}


def _rate(part: dict, nbytes: int, floor: float) -> dict:
    seconds = part["seconds"]
    return {**part, "gbPerSecond": round(nbytes / seconds / 1e9, 3) if seconds else None,
            "readOnceSeconds": round(floor, 3), "toReadOnce": round(seconds / floor, 2) if floor else None}


def run_replicas_bench(store: Path | None, copy: Path | None, *, messages: int, body_size: int, repeat: int = 2,
                       config: Path | None = None, progress=None) -> dict:
    """diff STORE COPY and hash STORE, best of `repeat` fresh processes each after an untimed one, and the
    read-once floors they are measured against (both stores' bytes for diff, STORE's for hash)."""
    tmp = Path(tempfile.mkdtemp(prefix="rmqtool-bench-replicas-"))
    try:
        with bench_store(store, config, messages, body_size, progress) as reader:
            a = reader.paths.root
            b = copy
            if b is None:
                if progress:
                    progress.print(f"copying {a} for diff ...")
                b = shutil.copytree(a, tmp / "copy")
            held = log_extent(reader)
            nbytes = held.end - held.start
            extra = ["--config", str(config)] if config else []
            diff_args, hash_args = ["diff", str(a), str(b), "--json", *extra], ["hash", str(a), "--json", *extra]
            run_process(diff_args)  # untimed: kernels loaded, pages cached
            run_process(hash_args)
            specs = [f"{root}:{held.start}:{held.end}" for root in (a, b)]
            read_both = min(_read_seconds(specs) for _ in range(repeat))
            read_one = min(_read_seconds(specs[:1]) for _ in range(repeat))
            diff = _rate(_timed(diff_args, repeat, 0), nbytes, read_both)
            hashed = _rate(_timed(hash_args, repeat, 0), nbytes, read_one)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"mode": "replicas", "store": str(a), "copy": str(copy) if copy else "temp copy", "bytes": nbytes,
            "segments": len(reader.segments), "diff": diff, "hash": hashed}
