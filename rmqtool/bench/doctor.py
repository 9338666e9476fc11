"""`bench doctor`: `doctor --apply` on a store with one damaged record against `verify` of the same store, each
an `rmqtool` process (wall, CPU, peak RSS), in the same run: the target is a ratio (doctor --apply at most 2x
verify on a 1 M-message store, its memory flat).

The store is generated in a temp dir (queues and index rebuilt by recovery, as `bench verify`'s) or is
STORE, which is never written: each round works on a copy of it. One bit of one body byte of the record
at the middle of the copy's log is flipped (the first record with a body from the log's middle offset on:
deterministic), so its body CRC fails, and the copy is synced to disk. `verify STORE --json` runs on the
damaged copy, then `doctor STORE --apply --json`: its cut at that record, the intact records after it
appended again, the queues and index mended, the check again. Both run once untimed first on a small
damaged store (imports, compiled kernels).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rmqtool.bench.process import CommandRun, command_run
from rmqtool.bench.readpath import indexed_store
from rmqtool.bench.rebuild import _copy
from rmqtool.bench.scan import throughput
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import StoreReader, open_reader
from rmqtool.errors import EXIT_PROBLEM, RmqError
from rmqtool.ops.hashing import log_extent
from rmqtool.structures.commitlog import message

MENDED, PLAN_APPLIED = "mended", "plan, applied"  # the doctor's --apply status as accepted (see accepted_status)
FLIPPED_BIT = 0x01
WARM_UP_MESSAGES = 2000


class DoctorBenchFailed(RmqError):
    """verify did not find the damage, or doctor --apply did not mend it: the bench has no figure to give."""

    exit_code = EXIT_PROBLEM


@dataclass(frozen=True)
class Damage:
    offset: int  # the damaged record's physical offset
    byte: int  # the physical offset of the body byte whose bit was flipped


def run_doctor_bench(store: Path | None, *, messages: int, body_size: int, repeat: int = 1,
                     config: Path | None = None, progress=None) -> dict:
    """verify, then doctor --apply, each a fresh process, on a damaged copy of STORE (or a generated store), after
    an untimed warm-up of both on a small store; `repeat` rounds, each on a fresh damaged copy (wall and CPU: the
    least of the rounds; peak RSS: the largest)."""
    tmp = Path(tempfile.mkdtemp(prefix="rmqtool-bench-doctor-"))
    extra = ["--config", str(config)] if config else []
    cfg = StoreConfig.from_file(config)[0] if config else None
    try:
        if body_size < 1 and store is None:
            raise RmqError("bench doctor damages a body: --body-size must be at least 1")
        source = tmp / "store"
        if store is None:
            if progress:
                progress.print(f"generating {messages} messages of {body_size} B (queues and index by recovery) ...")
            indexed_store(source, messages, body_size, cfg)
        else:
            source = Path(store)
        count, log_bytes = log_size(open_reader(source, config))
        if progress:
            progress.print("warm-up: verify and doctor --apply on a small damaged store (untimed) ...")
        warm = tmp / "warm-up"
        indexed_store(warm, WARM_UP_MESSAGES, max(body_size, 1), cfg)
        damage_middle(open_reader(warm, config))
        for args in (["verify", str(warm), "--json"], ["doctor", str(warm), "--apply", "--json"]):
            command_run([*args, *extra], check=False)
        shutil.rmtree(warm)
        rounds: list[tuple[CommandRun, CommandRun]] = []
        load_before = load_average()
        for k in range(repeat):
            root = tmp / f"round-{k}"
            _copy(source, root)
            damage = damage_middle(open_reader(root, config))
            os.sync()  # the copy's writeback is not in the clocks
            if progress:
                progress.print(f"round {k + 1} of {repeat}: verify, then doctor --apply, the record at "
                               f"{damage.offset} damaged ...")
            verify = command_run(["verify", str(root), "--json", *extra], check=False, capture=True)
            doctor = command_run(["doctor", str(root), "--apply", "--json", *extra], check=False, capture=True)
            shutil.rmtree(root, ignore_errors=True)
            found = _verify_found(verify, damage)
            mended = _doctor_mended(doctor, damage)
            rounds.append((verify, doctor))
        load_after = load_average()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    verify, doctor = (_best([r[i] for r in rounds]) for i in (0, 1))
    doc = throughput("doctor", count, log_bytes, doctor.wall, doctor.peak_rss)
    return {**doc, "rounds": repeat,
            "damage": {"offset": damage.offset, "byte": damage.byte, "bit": FLIPPED_BIT.bit_length() - 1},
            "verify": {**_timing(verify), "exitCode": verify.exit_code, "problems": found["problems"],
                       "byKind": found["byKind"]},
            "doctorApply": {**_timing(doctor), "exitCode": doctor.exit_code, **mended},
            "ratioToVerify": {"wall": _ratio(doctor.wall, verify.wall), "cpu": _ratio(doctor.cpu, verify.cpu),
                              "peakRss": _ratio(doctor.peak_rss, verify.peak_rss)},
            "loadAverage": {"before": load_before, "after": load_after}}


def _best(runs: list[CommandRun]) -> CommandRun:
    """The least wall and CPU seconds of `runs`, and the largest peak RSS (the last run's exit code)."""
    return CommandRun(min(r.wall for r in runs), min(r.cpu for r in runs), max(r.peak_rss for r in runs),
                      runs[-1].exit_code)


def log_size(reader: StoreReader) -> tuple[int, int]:
    """(records, bytes from the log's start to its last record's end), by a walk without CRC checks."""
    count = end = 0
    for chunk in reader.scan(verify_crc=False):
        batch = chunk.batch
        if batch is not None and len(batch):
            count += len(batch)
            end = int(batch.offsets[-1] + batch.cols["totalSize"][-1])
    if count == 0:
        raise RmqError(f"{reader.paths.root}: no messages: nothing to damage")
    return count, end - reader.segments[0].start


def damage_middle(reader: StoreReader) -> Damage:
    """Flip one bit of the middle body byte of the first record with a body at or after the log's middle offset
    (before it when none after has one), and check that the record's body CRC now fails."""
    if reader.dledger:
        raise RmqError(f"{reader.paths.root}: a DLedger log: bench doctor damages plain commitlog records")
    extent = log_extent(reader)
    middle = extent.start + (extent.end - extent.start) // 2
    target = _first_with_body(reader, middle) or _first_with_body(reader, extent.start)
    if target is None:
        raise RmqError(f"{reader.paths.root}: no record with a body: nothing to damage")
    offset, sys_flag, body_len = target
    byte = offset + message.header_len(sys_flag) + body_len // 2
    seg = reader.segment_for(byte)
    with open(seg.path, "r+b") as f:
        f.seek(byte - seg.start)
        old = f.read(1)[0]
        f.seek(byte - seg.start)
        f.write(bytes([old ^ FLIPPED_BIT]))
    if not isinstance(reader.read_record(offset), message.Corrupt):
        raise RmqError(f"{reader.paths.root}: the record at {offset} still reads as intact after a bit of its body "
                       "was flipped")
    return Damage(offset, byte)


def _first_with_body(reader: StoreReader, offset: int) -> tuple[int, int, int] | None:
    """(offset, sysFlag, bodyLength) of the first intact record with a body from `offset` on."""
    for chunk in reader.scan(offset, verify_crc=True):
        batch = chunk.batch
        if batch is None or not len(batch):
            continue
        bodies = (batch.cols["bodyLength"] > 0).nonzero()[0]
        if len(bodies):
            i = int(bodies[0])
            return int(batch.offsets[i]), int(batch.cols["sysFlag"][i]), int(batch.cols["bodyLength"][i])
    return None


def accepted_status(doc: dict) -> str | None:
    """How `doctor --apply --json` says it mended the store: status "mended", or (the form before it) status
    "plan" with `applied: true` and no problem left after; None when it says neither."""
    after = doc.get("after")
    if isinstance(after, dict) and after.get("problems"):
        return None
    if doc.get("status") == MENDED:
        return MENDED
    if doc.get("status") == "plan" and doc.get("applied") is True:
        return PLAN_APPLIED
    return None


def _verify_found(run: CommandRun, damage: Damage) -> dict:
    doc = _json_of(run, "verify")
    if run.exit_code != EXIT_PROBLEM or not doc.get("problems"):
        raise DoctorBenchFailed(f"bench doctor: verify did not find the record damaged at {damage.offset} (exit "
                                f"{run.exit_code}, {doc.get('problems', '?')} problems){_last_line(run)}")
    return {"problems": doc["problems"], "byKind": doc.get("byKind", {})}


def _doctor_mended(run: CommandRun, damage: Damage) -> dict:
    doc = _json_of(run, "doctor --apply")
    status = accepted_status(doc)
    if run.exit_code != 0 or status is None:
        raise DoctorBenchFailed(f"bench doctor: doctor --apply did not mend the record damaged at {damage.offset}: "
                                f"exit {run.exit_code}, status {doc.get('status', '?')!r}, applied "
                                f"{doc.get('applied', '?')}{_last_line(run)}")
    steps = doc.get("steps") or []
    after = doc.get("after") if isinstance(doc.get("after"), dict) else {}
    return {"status": doc["status"], "statusAccepted": status, "problems": doc.get("problems"),
            "byKind": doc.get("byKind", {}), "steps": [s.get("action") for s in steps],
            "recordsLost": doc.get("recordsLost"), "recordsKept": sum(s.get("recordsKept") or 0 for s in steps),
            "afterProblems": after.get("problems")}


def _json_of(run: CommandRun, what: str) -> dict:
    try:
        doc = json.loads(run.stdout)
    except ValueError:
        raise DoctorBenchFailed(f"bench doctor: {what} printed no JSON document (exit {run.exit_code})"
                                f"{_last_line(run)}") from None
    if not isinstance(doc, dict):
        raise DoctorBenchFailed(f"bench doctor: {what} printed JSON that is not an object (exit {run.exit_code})")
    return doc


def _last_line(run: CommandRun) -> str:
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    return f": {lines[-1].strip()}" if lines else ""


def _timing(run: CommandRun) -> dict:
    return {"wallSeconds": round(run.wall, 4), "cpuSeconds": round(run.cpu, 4), "peakRssBytes": run.peak_rss}


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (/proc/loadavg), None where they cannot be read."""
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except (OSError, ValueError):
        return None
