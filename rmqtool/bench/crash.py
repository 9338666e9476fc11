"""Crash rounds: a writer appends (sync or async flush) and prints every acknowledgement; it is
killed with SIGKILL at a random moment; `recover` runs; then every acknowledged message must be
in the store, intact, at the offset it was acknowledged with, and `verify` must find nothing.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import StoreReader
from rmqtool.ops.recovery import recover_store
from rmqtool.ops.verify import verify_store

_WRITER = r"""
import sys
from rmqtool.structures.commitlog.hosts import parse_host
from rmqtool.structures.commitlog.message import Message
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.message_store import MessageStore
root, flush, segment = sys.argv[1], sys.argv[2], int(sys.argv[3])
cfg = StoreConfig()
cfg.mappedFileSizeCommitLog, cfg.mappedFileSizeConsumeQueue = segment, 20 * 1000
cfg.maxHashSlotNum, cfg.maxIndexNum = 1024, 4096
host = parse_host("10.0.0.1:10911")
with MessageStore(root, cfg, flush=flush) as store:
    seq = 0
    while True:
        body = ("m%08d" % seq).encode() * (1 + seq % 7)
        m = Message(topic="CrashTopic", body=body, properties_string="UNIQ_KEY\x01u%d\x02KEYS\x01k%d" % (seq, seq % 50),
                    queue_id=seq % 3, born_host=host, store_host=host)
        r = store.put_message(m)
        print(seq, r.wrote_offset, r.queue_offset, flush=True)
        seq += 1
"""

SEGMENT = 64 * 1024
_FIRST_ACK_WAIT = 60.0  # seconds the writer may take to acknowledge its first message


def crash_config() -> StoreConfig:
    cfg = StoreConfig()
    cfg.mappedFileSizeCommitLog, cfg.mappedFileSizeConsumeQueue = SEGMENT, 20 * 1000
    cfg.maxHashSlotNum, cfg.maxIndexNum = 1024, 4096
    return cfg


def crash_round(root: Path, flush: str, rng: random.Random) -> dict:
    """One writer killed at a random moment, then recovered and checked."""
    errors = tempfile.TemporaryFile()  # noqa: SIM115 - read when the writer acknowledged nothing
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(root), flush, str(SEGMENT)], stdout=subprocess.PIPE,
                            stderr=errors)
    acked: list[tuple[int, int, int]] = []
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    out = bytearray()
    started = time.monotonic() + _FIRST_ACK_WAIT  # a busy machine may take seconds to start the writer
    while b"\n" not in out and time.monotonic() < started and proc.poll() is None:
        out += _drain(fd)
        time.sleep(0.005)
    deadline = time.monotonic() + rng.uniform(0.5, 2.0)  # killed at a random moment after the store exists
    while time.monotonic() < deadline and proc.poll() is None:
        out += _drain(fd)
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    out += _drain(fd)
    proc.stdout.close()
    lines = out.decode().split("\n")[:-1]  # the last piece may be a line cut by the kill
    for line in lines:
        parts = line.split()
        if len(parts) == 3:
            acked.append(tuple(int(p) for p in parts))
    if not acked:
        raise RuntimeError(_no_acknowledgement(proc.returncode, errors))
    errors.close()
    cfg = crash_config()
    plan, _ = recover_store(root, cfg)
    reader = StoreReader(root, cfg)
    stored = {}
    for chunk in reader.scan():
        if chunk.batch is not None:
            for i in range(len(chunk.batch)):
                m = chunk.batch.message(i)
                stored[m.physical_offset] = m
    lost = 0
    for seq, offset, queue_offset in acked:
        m = stored.get(offset)
        body = f"m{seq:08d}".encode() * (1 + seq % 7)
        if m is None or m.body != body or m.queue_offset != queue_offset:
            lost += 1
    report = verify_store(reader)
    return {"acknowledged": len(acked), "stored": len(stored), "lost": lost, "problems": report.problems,
            "droppedTail": plan.dropped_count, "cutBytes": sum(c.bytes for c in plan.cuts),
            "mode": plan.mode}


def _no_acknowledgement(code: int, errors) -> str:
    """Why a writer acknowledged nothing: it died (its exit code and last error line), or it was slow."""
    if code == -signal.SIGKILL:
        return f"the writer acknowledged nothing within {_FIRST_ACK_WAIT} s"
    errors.seek(0)
    lines = errors.read().decode(errors="replace").strip().splitlines()
    return f"the writer exited with code {code} before its first acknowledgement: {lines[-1] if lines else '-'}"


def _drain(fd: int) -> bytes:
    data = bytearray()
    while True:
        try:
            piece = os.read(fd, 1 << 16)
        except BlockingIOError:
            return bytes(data)
        if not piece:
            return bytes(data)
        data += piece


def run_crash_rounds(rounds: int, flush: str = "sync", seed: int | None = None) -> dict:
    rng = random.Random(seed)
    totals = {"rounds": rounds, "flush": flush, "acknowledged": 0, "lost": 0, "problems": 0, "roundsWithCut": 0}
    for _ in range(rounds):
        tmp = Path(tempfile.mkdtemp(prefix="rmqtool-crash-"))
        try:
            r = crash_round(tmp / "store", flush, rng)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        totals["acknowledged"] += r["acknowledged"]
        totals["lost"] += r["lost"]
        totals["problems"] += r["problems"]
        totals["roundsWithCut"] += bool(r["cutBytes"] or r["droppedTail"])
    return totals


if __name__ == "__main__":
    print(json.dumps(run_crash_rounds(int(sys.argv[1]) if len(sys.argv) > 1 else 5)))
