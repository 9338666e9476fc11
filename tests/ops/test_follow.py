"""`decode commitlog --follow`: records printed as a writer appends them (across segment rolls), each once
and only when whole, read-only beside the writer; Ctrl-C ends with exit 0."""

from __future__ import annotations

import base64
import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_helpers import RMQTOOL, run

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.message_store import MessageStore
from rmqtool.engine.reader import open_reader
from rmqtool.files.paths import offset_name
from rmqtool.ops.log_rows import log_lines
from rmqtool.structures.commitlog.hosts import parse_host
from rmqtool.structures.commitlog.message import Message

SEG = 4096
HOST = parse_host("10.0.0.9:10911")
DEADLINE = 15.0  # seconds a line may take at most (a loaded machine); a passing run takes far less
PROBE_WAIT = 0.2  # seconds to wait for the follower's first line before writing the next probe


def _cfg() -> StoreConfig:
    cfg = StoreConfig()
    cfg.mappedFileSizeCommitLog, cfg.mappedFileSizeConsumeQueue = SEG, 400
    cfg.maxHashSlotNum, cfg.maxIndexNum = 8, 32
    return cfg


def _put(store: MessageStore, topic: str, body: str) -> tuple[str, str, int]:
    result = store.put_message(Message(topic=topic, body=body.encode(), properties_string=f"KEYS\x01{body}",
                                       born_host=HOST, store_host=HOST))
    assert result.ok
    return topic, body, result.wrote_offset


class Follower:
    """`rmqtool decode commitlog ROOT --follow --jsonl [args]` running, its lines read as they come."""

    def __init__(self, root: Path, *args: str) -> None:
        self.proc = subprocess.Popen([RMQTOOL, "decode", "commitlog", str(root), "--follow", "--jsonl", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: list[dict] = []
        self._rest = b""

    def read(self, timeout: float) -> None:
        """Take the lines that arrive within `timeout` seconds (returns at the first bytes)."""
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if ready:
            data = os.read(self.proc.stdout.fileno(), 1 << 16)
            assert data, f"the follower ended: {self.proc.stderr.read().decode()}"
            *whole, self._rest = (self._rest + data).split(b"\n")
            self.lines += [json.loads(line) for line in whole]

    def wait_for(self, n: int) -> None:
        deadline = time.monotonic() + DEADLINE
        while len(self.lines) < n and time.monotonic() < deadline:
            self.read(deadline - time.monotonic())
        assert len(self.lines) >= n, f"{len(self.lines)} lines, expected {n}"

    def interrupt(self) -> tuple[int, str, bytes]:
        """Ctrl-C: (exit code, stderr, what stdout still held)."""
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=DEADLINE)
        return self.proc.returncode, err.decode(), self._rest + out

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def _shown(lines: list[dict]) -> list[tuple[str, str, int]]:
    return [(m["topic"], base64.b64decode(m["body"]).decode(), m["commitLogOffset"]) for m in lines]


def test_follow_misses_or_repeats_records_written_across_segment_rolls(tmp_path):
    store = MessageStore(tmp_path / "store", _cfg())
    follower = None
    try:
        before = [_put(store, "Old", f"old-{i}") for i in range(5)]
        follower = Follower(tmp_path / "store")
        written: list[tuple[str, str, int]] = []
        deadline = time.monotonic() + DEADLINE
        while not follower.lines and time.monotonic() < deadline:  # probes until the follower has started
            written.append(_put(store, "Probe", f"probe-{len(written)}"))
            follower.read(PROBE_WAIT)
        assert follower.lines, "the follower printed nothing"
        first = written.index(_shown(follower.lines[:1])[0])
        written += [_put(store, f"T{i % 3}", f"m-{i}") for i in range(80)]
        follower.wait_for(len(written) - first)
        code, err, rest = follower.interrupt()
    finally:
        if follower is not None:
            follower.kill()
        store.close()
    assert _shown(follower.lines) == written[first:]
    assert not set(before) & set(_shown(follower.lines))
    offsets = [offset for _, _, offset in written[first:]]
    assert offsets[-1] // SEG - offsets[0] // SEG >= 2  # two segment rolls while it followed
    assert (code, err, rest) == (0, "", b"")


def _master(root: Path) -> tuple[list[tuple[int, int]], dict[int, dict]]:
    """A store of three records: (offset, size) of each, and the JSON line decode prints for each."""
    with MessageStore(root, _cfg()) as store:
        results = [store.put_message(Message(topic="Cut", body=f"body-{i}".encode() * 3,
                                             properties_string=f"KEYS\x01key-{i}\x02TAGS\x01tag-{i}",
                                             born_host=HOST, store_host=HOST)) for i in range(3)]
    lines = [json.loads(line) for block in log_lines(open_reader(root), "base64") for line in bytes(block).split()]
    return [(r.wrote_offset, r.wrote_bytes) for r in results], {m["commitLogOffset"]: m for m in lines}


@pytest.mark.parametrize("cut", [60, -3], ids=["inside-the-header", "inside-the-properties"])
def test_follow_prints_a_record_a_replica_wrote_in_two_parts_before_its_second_part(tmp_path, cut):
    records, expected = _master(tmp_path / "master")
    master = (tmp_path / "master" / "commitlog" / offset_name(0)).read_bytes()
    _, (whole_at, _), (split_at, split_len) = records
    replica = tmp_path / "replica" / "commitlog" / offset_name(0)
    replica.parent.mkdir(parents=True)
    replica.write_bytes(master[:whole_at] + bytes(SEG - whole_at))  # the old record, then zeros
    middle = split_at + cut % split_len
    follower = Follower(tmp_path / "replica", "--phy-offset", str(whole_at))
    try:
        with open(replica, "r+b") as f:
            f.seek(whole_at)
            f.write(master[whole_at:middle])  # a whole record and the first part of the next, in one write
            f.flush()
            follower.wait_for(1)
            f.seek(middle)
            f.write(master[middle : split_at + split_len])
            f.flush()
        follower.wait_for(2)
        code, err, rest = follower.interrupt()
    finally:
        follower.kill()
    assert follower.lines == [expected[whole_at], expected[split_at]]
    assert (code, err, rest) == (0, "", b"")


def test_follow_with_one_json_document_is_refused(tmp_path):
    with MessageStore(tmp_path / "store", _cfg()) as store:
        _put(store, "T", "x")
    out = run("decode", "commitlog", tmp_path / "store", "--follow", "--json")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == "rmqtool: error: --follow prints messages as they come: use --jsonl (or the table), " \
                         "not --json\n"


def test_follow_of_one_segment_file_is_refused(tmp_path):
    with MessageStore(tmp_path / "store", _cfg()) as store:
        _put(store, "T", "x")
    segment = tmp_path / "store" / "commitlog" / offset_name(0)
    out = run("decode", "commitlog", segment, "--follow", "--jsonl")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == f"rmqtool: error: {segment}: --follow reads a store root, not one segment file\n"
