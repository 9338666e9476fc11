"""rmqtool's master and follower on 127.0.0.1: byte-identical copies through cut records, segment rolls,
restarts on either side and idle periods; SYNC_MASTER statuses; stores that do not line up refused."""

from __future__ import annotations

import json
import random
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest
from cli_helpers import RMQTOOL, RUN_GUARD_S

from rmqtool.engine.config import SYNC_MASTER, StoreConfig
from rmqtool.engine.ha.acks import SlaveAcks
from rmqtool.engine.ha.master import HaMaster
from rmqtool.engine.ha.slave import Follower
from rmqtool.engine.message_store import MessageStore
from rmqtool.engine.results import PutStatus
from rmqtool.errors import RmqError
from rmqtool.ops.diff import diff_stores
from rmqtool.ops.replication import serving
from rmqtool.structures.commitlog.hosts import parse_host
from rmqtool.structures.commitlog.message import Message

DEADLINE_S = RUN_GUARD_S
CONF = """mappedFileSizeCommitLog=16384
mappedFileSizeConsumeQueue=400
maxHashSlotNum=16
maxIndexNum=64
haTransferBatchSize=1000
haSendHeartbeatInterval=100
haHousekeepingInterval=1500
slaveTimeout=500
"""


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    path = tmp_path / "broker.conf"
    path.write_text(CONF)
    return path


def _cfg(conf: Path, **changes) -> StoreConfig:
    cfg, _ = StoreConfig.from_file(conf)
    for k, v in changes.items():
        setattr(cfg, k, v)
    return cfg


def _messages(n: int, seed: int = 7) -> list[Message]:
    rng = random.Random(seed)
    host = parse_host("127.0.0.1:30000")
    return [Message(topic=f"T{i % 3}", body=bytes(rng.randrange(256) for _ in range(rng.choice((5, 300, 2500)))),
                    properties_string=f"KEYS\x01k{i}\x02UNIQ_KEY\x01U{i:08d}\x02", queue_id=i % 4,
                    born_host=host, store_host=host, born_timestamp=1_700_000_000_000 + i) for i in range(n)]


def _master(path: Path, cfg: StoreConfig, port: int = 0) -> tuple[MessageStore, HaMaster]:
    ms = MessageStore(path, cfg, acks=SlaveAcks(cfg.haSlaveFallbehindMax, cfg.slaveTimeout))
    return ms, HaMaster(ms, port=port)


def _wait(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class Following:
    """A Follower in a thread of the test."""

    def __init__(self, path: Path, cfg: StoreConfig, port: int, ack: str = "flushed") -> None:
        self.store = MessageStore(path, cfg)
        self.stop = threading.Event()
        self.follower = Follower(self.store, "127.0.0.1", port, ack=ack, stop=self.stop)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.follower.run()
        except BaseException as e:
            self.error = e

    def acked(self, offset: int) -> bool:
        return self.follower.status.acked >= offset

    def close(self) -> None:
        self.stop.set()
        self.thread.join(DEADLINE_S)
        self.store.close_replica()
        if self.error:
            raise self.error


def _same_commitlog(a: Path, b: Path) -> None:
    names = sorted(p.name for p in (a / "commitlog").iterdir())
    assert names == sorted(p.name for p in (b / "commitlog").iterdir())
    for name in names:
        assert (a / "commitlog" / name).read_bytes() == (b / "commitlog" / name).read_bytes(), name


@pytest.mark.parametrize("ack", ["flushed", "written"])
def test_follower_is_byte_identical_through_cut_records_and_segment_rolls(tmp_path, conf, ack):
    cfg = _cfg(conf)
    ms, master = _master(tmp_path / "m", cfg)
    slave = Following(tmp_path / "s", cfg, master.address[1], ack)
    try:
        _wait(lambda: master.connections == 1 and slave.follower.status.connected, "the follower")
        for msg in _messages(120):
            assert ms.put_message(msg).ok
        _wait(lambda: slave.acked(ms.commitlog.max_offset), "the follower's ack of the end")
    finally:
        slave.close()
        master.close()
        ms.close()
    assert len(list((tmp_path / "m" / "commitlog").iterdir())) >= 5  # the copy crossed segment rolls
    _same_commitlog(tmp_path / "m", tmp_path / "s")
    doc = diff_stores(tmp_path / "m", tmp_path / "s", conf, conf)
    assert doc["identical"], doc


def test_two_followers_of_one_master_both_copy_it_and_a_sync_put_needs_only_one(tmp_path, conf):
    cfg = _cfg(conf, brokerRole=SYNC_MASTER)
    ms, master = _master(tmp_path / "m", cfg)
    slaves = [Following(tmp_path / f"s{i}", cfg, master.address[1]) for i in range(2)]
    try:
        _wait(lambda: master.connections == 2, "both followers")
        statuses = {ms.put_message(msg).status for msg in _messages(40)}
        _wait(lambda: all(s.acked(ms.commitlog.max_offset) for s in slaves), "both acks")
    finally:
        for s in slaves:
            s.close()
        master.close()
        ms.close()
    assert statuses == {PutStatus.PUT_OK}
    for i in range(2):
        _same_commitlog(tmp_path / "m", tmp_path / f"s{i}")


def test_follower_reconnects_to_a_restarted_master_and_goes_on(tmp_path, conf):
    cfg = _cfg(conf)
    ms, master = _master(tmp_path / "m", cfg)
    port = master.address[1]
    slave = Following(tmp_path / "s", cfg, port)
    msgs = _messages(60)
    try:
        # the master's first frame fixes where the transfer starts (the segment of its end then): puts after it
        _wait(lambda: slave.follower.status.connected and slave.follower.status.heartbeats > 0, "the first frame")
        for msg in msgs[:30]:
            ms.put_message(msg)
        _wait(lambda: slave.acked(ms.commitlog.max_offset), "the first half")
        master.close()
        ms.close()
        ms, master = _master(tmp_path / "m", cfg, port)
        for msg in msgs[30:]:
            ms.put_message(msg)
        _wait(lambda: slave.acked(ms.commitlog.max_offset), "the second half")
        # at least the first connection and one to the restarted master; a third (seen about 1 run in 10, cause not
        # found) only reconnects again: what was acked and the copy's bytes are what this test holds to
        assert slave.follower.status.connects >= 2
    finally:
        slave.close()
        master.close()
        ms.close()
    _same_commitlog(tmp_path / "m", tmp_path / "s")


def test_idle_connection_lives_on_heartbeats_past_the_housekeeping_interval(tmp_path, conf):
    cfg = _cfg(conf)
    ms, master = _master(tmp_path / "m", cfg)
    slave = Following(tmp_path / "s", cfg, master.address[1])
    try:
        ms.put_message(_messages(1)[0])
        _wait(lambda: slave.acked(ms.commitlog.max_offset), "the ack")
        since = time.monotonic()
        _wait(lambda: time.monotonic() - since > cfg.haHousekeepingInterval / 1000 * 1.5
              and slave.follower.status.heartbeats > 10, "heartbeats past the housekeeping interval")
        assert slave.follower.status.connects == 1 and master.connections == 1
    finally:
        slave.close()
        master.close()
        ms.close()


def test_sync_master_statuses_follow_the_slaves_acks(tmp_path, conf):
    cfg = _cfg(conf, brokerRole=SYNC_MASTER)
    ms, master = _master(tmp_path / "m", cfg)
    msgs = iter(_messages(10))
    try:
        before = ms.commitlog.max_offset
        assert ms.put_message(next(msgs)).status is PutStatus.SLAVE_NOT_AVAILABLE
        assert ms.commitlog.max_offset > before  # stored all the same
        slave = Following(tmp_path / "s", cfg, master.address[1])
        try:
            _wait(lambda: master.connections == 1 and slave.acked(ms.commitlog.max_offset), "the follower")
            assert ms.put_message(next(msgs)).status is PutStatus.PUT_OK
        finally:
            slave.close()
        _wait(lambda: master.connections == 0, "the follower to leave")
        with socket.create_connection(master.address) as silent:  # reports once, never acknowledges
            silent.sendall(struct.pack(">q", ms.commitlog.max_offset))
            _wait(lambda: master.connections == 1, "the silent slave")
            started = time.monotonic()
            assert ms.put_message(next(msgs)).status is PutStatus.FLUSH_SLAVE_TIMEOUT
            assert time.monotonic() - started >= cfg.slaveTimeout / 1000
    finally:
        master.close()
        ms.close()


def test_follower_ahead_of_its_master_is_refused_with_both_offsets(tmp_path, conf):
    cfg = _cfg(conf)
    msgs = _messages(40)
    with MessageStore(tmp_path / "m", cfg) as ms:
        for msg in msgs[:20]:
            ms.put_message(msg)
        master_end = ms.commitlog.max_offset
    shutil.copytree(tmp_path / "m", tmp_path / "s")
    with MessageStore(tmp_path / "s", cfg) as ss:
        for msg in msgs[20:]:
            ss.put_message(msg)
        slave_end = ss.commitlog.max_offset
    ms, master = _master(tmp_path / "m", cfg)
    try:
        proc = subprocess.run([RMQTOOL, "ha", "follow", str(tmp_path / "s"), "--master",
                               f"127.0.0.1:{master.address[1]}", "--config", str(conf)],
                              capture_output=True, text=True, timeout=DEADLINE_S)
    finally:
        master.close()
        ms.close()
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and f"offset {master_end}" in errors[0] and f"ends at {slave_end}" in errors[0], \
        proc.stderr
    assert not (tmp_path / "s" / "abort").exists()


def _status_lines(proc: subprocess.Popen, until) -> dict:
    """Read the follower's --jsonl status lines until one satisfies `until`."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        doc = json.loads(line)
        if until(doc):
            return doc
    raise AssertionError("the follower's status never got there")


def test_follower_killed_with_sigkill_recovers_and_catches_up_byte_identical(tmp_path, conf):
    cfg = _cfg(conf)
    ms, master = _master(tmp_path / "m", cfg)
    slave = tmp_path / "s"
    msgs = _messages(150)
    cmd = [RMQTOOL, "ha", "follow", str(slave), "--master", f"127.0.0.1:{master.address[1]}", "--config",
           str(conf), "--jsonl"]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _status_lines(proc, lambda d: d["connected"])
            for msg in msgs[:100]:
                ms.put_message(msg)
            _status_lines(proc, lambda d: d["ownOffset"] > 0)
            proc.kill()
            proc.wait(DEADLINE_S)
        finally:
            proc.kill()
        assert (slave / "abort").exists()
        for msg in msgs[100:]:
            ms.put_message(msg)
        done = subprocess.run([*cmd[:-1], "--until-caught-up"], capture_output=True, text=True,
                              timeout=DEADLINE_S)
        assert done.returncode == 0, done.stderr
        assert "recovered" in done.stderr
        _same_commitlog(tmp_path / "m", slave)
    finally:
        master.close()
        ms.close()
    assert not (slave / "abort").exists()


def test_ctrl_c_closes_the_follower_cleanly(tmp_path, conf):
    cfg = _cfg(conf)
    ms, master = _master(tmp_path / "m", cfg)
    try:
        slave_conf = tmp_path / "slave.conf"  # the master's address from broker.conf's haMasterAddress
        slave_conf.write_text(CONF + f"haMasterAddress=127.0.0.1:{master.address[1]}\n")
        proc = subprocess.Popen([RMQTOOL, "ha", "follow", str(tmp_path / "s"), "--config", str(slave_conf),
                                 "--jsonl"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _status_lines(proc, lambda d: d["connected"])
        ms.put_message(_messages(1)[0])
        _status_lines(proc, lambda d: d["ackedOffset"] == ms.commitlog.max_offset)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        master.close()
        ms.close()
    assert proc.returncode == 130, err  # closed cleanly, and said to be interrupted as every command is
    assert "Traceback" not in err
    assert not (tmp_path / "s" / "abort").exists()
    _same_commitlog(tmp_path / "m", tmp_path / "s")


def test_serve_append_reports_each_rows_sync_status(tmp_path, conf):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(f'{{"topic": "T", "bodyText": "m{i}"}}\n' for i in range(3)))
    with MessageStore(tmp_path / "m", _cfg(conf)):
        pass
    master_conf = tmp_path / "master.conf"  # the port from broker.conf's haListenPort (0: any free one)
    master_conf.write_text(CONF + "haListenPort=0\n")
    proc = subprocess.Popen([RMQTOOL, "ha", "serve", str(tmp_path / "m"), "--config", str(master_conf),
                             "--role", "sync", "--append", str(rows)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        docs = [json.loads(proc.stdout.readline()) for _ in range(3)]
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=DEADLINE_S)
    assert [d["status"] for d in docs] == ["SLAVE_NOT_AVAILABLE"] * 3
    assert [d["row"] for d in docs] == [1, 2, 3]
    assert proc.returncode == 130, err
    assert "serving" in err and "127.0.0.1:" in err


def test_follower_with_another_segment_size_than_its_master_is_refused(tmp_path, conf):
    cfg = _cfg(conf)
    ms, master = _master(tmp_path / "m", cfg)
    slave = Following(tmp_path / "s", _cfg(conf, mappedFileSizeCommitLog=65536), master.address[1])
    try:
        _wait(lambda: master.connections == 1, "the follower")
        for msg in _messages(30):
            ms.put_message(msg)
        _wait(lambda: not slave.thread.is_alive(), "the follower to stop")
    finally:
        master.close()
        ms.close()
    # under load the master may start the follower at its last segment (16384): refused at the first frame then
    with pytest.raises(RmqError, match=r"mappedFileSizeCommitLog.*(is not its master's|the master's segments have "
                                       r"another size).*--config"):
        slave.close()


def test_follower_of_an_empty_store_under_the_default_segment_size_names_the_setting_and_config(tmp_path, conf):
    """The master starts an empty follower at its last segment (16384 * k here), no 1 GiB segment start."""
    ms, master = _master(tmp_path / "m", _cfg(conf))
    try:
        for msg in _messages(30):
            ms.put_message(msg)
        start = ms.commitlog.max_offset // 16384 * 16384
        slave = Following(tmp_path / "s", StoreConfig(), master.address[1])
        _wait(lambda: not slave.thread.is_alive(), "the follower to stop")
    finally:
        master.close()
        ms.close()
    with pytest.raises(RmqError) as refused:
        slave.close()
    assert str(refused.value) == (f"a first frame at offset {start} is not at a segment start of "
                                  "mappedFileSizeCommitLog=1073741824: the master's segments have another size "
                                  "(give its broker.conf with --config)")


def test_catch_up_with_frames_smaller_than_a_records_takes_many_frames_per_send(tmp_path, conf):
    cfg = _cfg(conf, haTransferBatchSize=16)  # 16-byte frames: a send call carries hundreds of them
    with MessageStore(tmp_path / "m", cfg) as ms:
        for msg in _messages(12):
            ms.put_message(msg)
    shutil.copytree(tmp_path / "m" / "commitlog", tmp_path / "s" / "commitlog")
    first = sorted((tmp_path / "s" / "commitlog").iterdir())[0]
    first.write_bytes(bytes(first.stat().st_size))  # the copy holds the first segment as zeros: all to resend
    for later in sorted((tmp_path / "s" / "commitlog").iterdir())[1:]:
        later.unlink()
    ms, master = _master(tmp_path / "m", cfg)
    slave = Following(tmp_path / "s", cfg, master.address[1])
    try:
        _wait(lambda: slave.acked(ms.commitlog.max_offset), "the catch-up")
    finally:
        slave.close()
        master.close()
        ms.close()
    _same_commitlog(tmp_path / "m", tmp_path / "s")


def test_bad_addresses_and_a_taken_port_are_one_line_refusals(tmp_path, conf):
    with MessageStore(tmp_path / "m", _cfg(conf)):
        pass
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        serve = subprocess.run([RMQTOOL, "ha", "serve", str(tmp_path / "m"), "--port", str(port), "--config",
                                str(conf)], capture_output=True, text=True, timeout=DEADLINE_S)
    assert serve.returncode == 2
    assert serve.stderr.strip().splitlines() == [f"rmqtool: error: cannot listen on 127.0.0.1:{port}: "
                                                 f"Address already in use"]
    for bad in ("nohost", "127.0.0.1:99999", ":10912"):
        follow = subprocess.run([RMQTOOL, "ha", "follow", str(tmp_path / "s"), "--master", bad],
                                capture_output=True, text=True, timeout=DEADLINE_S)
        assert follow.returncode == 2
        assert follow.stderr.strip() == f"rmqtool: error: --master must be HOST:PORT, not {bad!r}"
        assert not (tmp_path / "s").exists()


def test_serve_recovers_a_store_left_with_abort_first_as_follow_and_the_broker_do(tmp_path, conf):
    """`ha serve` refused a store left with `abort` ("run rmqtool recover first") where `ha follow` and the Java
    broker recover at start."""
    with MessageStore(tmp_path / "m", _cfg(conf)) as ms:
        for msg in _messages(5):
            ms.put_message(msg)
        end = ms.commitlog.max_offset
    (tmp_path / "m" / "abort").touch()
    said: list[str] = []
    with serving(tmp_path / "m", _cfg(conf), port=0, bind="127.0.0.1", role="async", log=said.append) as master:
        assert master.store.commitlog.max_offset == end
        assert said[0].startswith(f"recovered {tmp_path / 'm'} first (its last writer stopped without closing it)")
    assert not (tmp_path / "m" / "abort").exists()


def test_follower_level_with_an_idle_master_has_no_lag_and_keeps_its_transfer_rate(tmp_path, conf):
    """lagMs was the age of the newest record (14,918 ms with lagBytes 0 against an idle master) and mbPerSecond
    0.0 after a catch-up; the SYNC_MASTER note was printed whatever the master's role."""
    cfg = _cfg(conf)
    ms, master = _master(tmp_path / "m", cfg)
    try:
        for msg in _messages(40):
            ms.put_message(msg)
        proc = subprocess.Popen([RMQTOOL, "ha", "follow", str(tmp_path / "s"), "--master",
                                 f"127.0.0.1:{master.address[1]}", "--config", str(conf), "--jsonl"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        level = _status_lines(proc, lambda d: d["caughtUp"] and d["ownOffset"] == ms.commitlog.max_offset)
        later = _status_lines(proc, lambda d: True)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        master.close()
        ms.close()
    assert (level["lagBytes"], level["lagMs"], later["lagMs"]) == (0, 0, 0)
    assert level["mbPerSecond"] > 0 and later["mbPerSecond"] > 0  # the transfer's rate, not the idle second's
    assert proc.returncode == 143 and "Traceback" not in err
    assert "if the master is a SYNC_MASTER (its role is not on the wire)" in err


def _serving_a_pipe(tmp_path: Path, conf: Path) -> subprocess.Popen:
    """`ha serve STORE --append -` on a new store, any free port, its stdin a pipe the test writes."""
    with MessageStore(tmp_path / "m", _cfg(conf)):
        pass
    master_conf = tmp_path / "master.conf"
    master_conf.write_text(CONF + "haListenPort=0\n")
    return subprocess.Popen([RMQTOOL, "ha", "serve", str(tmp_path / "m"), "--config", str(master_conf),
                             "--append", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_serve_append_from_a_live_pipe_appends_each_row_as_it_arrives_and_stops_on_sigterm(tmp_path, conf):
    """`ha serve --append -` read stdin to its end before the first row and ignored SIGTERM while it was open."""
    proc = _serving_a_pipe(tmp_path, conf)
    try:
        docs = []
        for i in range(3):  # the pipe stays open: each row comes back before the next is written
            proc.stdin.write(f'{{"topic": "T", "bodyText": "m{i}"}}\n')
            proc.stdin.flush()
            docs.append(json.loads(proc.stdout.readline()))
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        proc.kill()
    assert [(d["row"], d["status"]) for d in docs] == [(1, "PUT_OK"), (2, "PUT_OK"), (3, "PUT_OK")]
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert not (tmp_path / "m" / "abort").exists()


def test_serve_append_from_a_pipe_names_a_bad_rows_line_among_all_the_pipes_lines(tmp_path, conf):
    proc = _serving_a_pipe(tmp_path, conf)
    try:
        proc.stdin.write('{"topic": "T", "bodyText": "m0"}\n\n')
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        _out, err = proc.communicate('{"topic": 5}\n', timeout=DEADLINE_S)
    finally:
        proc.kill()
    assert first["row"] == 1 and proc.returncode == 2
    assert err.splitlines()[-1].startswith("rmqtool: error: -:3: topic: must be a string"), err


def test_sync_puts_one_after_another_read_their_own_acks_not_the_reader_thread(tmp_path, conf):
    """The put that waits reads the follower's report itself: no hand-off from the reader thread per put.
    The first puts may find the reader thread inside its wait for bytes; it steps aside while puts come."""
    cfg = _cfg(conf, brokerRole=SYNC_MASTER, slaveTimeout=3000)
    ms, master = _master(tmp_path / "m", cfg)
    slave = Following(tmp_path / "s", cfg, master.address[1], "written")
    readers: list[str] = []
    try:
        _wait(lambda: master.connections == 1 and slave.acked(ms.commitlog.max_offset), "the follower")
        (conn,) = master._conns
        take = conn._take
        conn._take = lambda data: readers.append(threading.current_thread().name) or take(data)
        for msg in _messages(60):
            assert ms.put_message(msg).status is PutStatus.PUT_OK
        during = list(readers)  # the reports read while the puts came
    finally:
        slave.close()
        master.close()
        ms.close()
    assert len(during) >= 60
    # the put's own thread reads reports; which reports the reader thread still takes (it steps aside after its
    # current read, and reads again after a pause between puts) depends on the machine's pace, so it is not held to
    assert threading.current_thread().name in set(during)
    _same_commitlog(tmp_path / "m", tmp_path / "s")


def test_sync_waits_of_several_producer_threads_are_all_released_by_the_acks_one_of_them_reads(tmp_path, conf):
    """4 producer threads: each appends under one lock (the store has one writer, as the broker's put lock) and
    waits for its ack outside it. One waiting put reads the reports, the others wait for it; an ack that
    covers several puts releases them all, and a put that stops reading lets a waiting one read next."""
    cfg = _cfg(conf, brokerRole=SYNC_MASTER, slaveTimeout=3000)
    ms, master = _master(tmp_path / "m", cfg)
    slave = Following(tmp_path / "s", cfg, master.address[1], "written")
    msgs = _messages(160)
    statuses: list[PutStatus] = []
    append = threading.Lock()
    readers: set[str] = set()

    def produce(part: list[Message]) -> None:
        for msg in part:
            with append:
                result = ms.put_message(msg)
            statuses.append(ms.acks.wait(result.wrote_offset + result.wrote_bytes))

    try:
        _wait(lambda: master.connections == 1 and slave.acked(ms.commitlog.max_offset), "the follower")
        (conn,) = master._conns
        take = conn._take
        conn._take = lambda data: readers.add(threading.current_thread().name) or take(data)
        ms.sync_master = False  # the put appends and wakes the sender; the producer waits itself, outside the lock
        producers = [threading.Thread(target=produce, args=(msgs[i::4],), name=f"producer-{i}") for i in range(4)]
        for t in producers:
            t.start()
        for t in producers:
            t.join(DEADLINE_S)
        _wait(lambda: slave.acked(ms.commitlog.max_offset), "the follower's ack of the end")
    finally:
        slave.close()
        master.close()
        ms.close()
    assert statuses == [PutStatus.PUT_OK] * 160
    assert readers & {t.name for t in producers}
    _same_commitlog(tmp_path / "m", tmp_path / "s")


def test_serve_append_stamps_the_stores_own_host_not_loopback(tmp_path, conf):
    """`ha serve --append` stamped storeHost 127.0.0.1:10911 where `append` and `import` use the store's own host
    (the msgId then named the wrong broker)."""
    own = parse_host("10.1.2.3:10911")
    with MessageStore(tmp_path / "m", _cfg(conf)) as ms:
        ms.put_message(Message(topic="T", body=b"first", born_host=own, store_host=own))
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"topic": "T", "bodyText": "second"}\n')
    master_conf = tmp_path / "master.conf"
    master_conf.write_text(CONF + "haListenPort=0\n")
    proc = subprocess.Popen([RMQTOOL, "ha", "serve", str(tmp_path / "m"), "--config", str(master_conf),
                             "--append", str(rows)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        doc = json.loads(proc.stdout.readline())
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        proc.kill()
    assert (doc["row"], doc["status"], proc.returncode) == (1, "PUT_OK", 143), err
    out = subprocess.run([RMQTOOL, "decode", "commitlog", str(tmp_path / "m"), "--config", str(conf), "--jsonl"],
                         capture_output=True, text=True, timeout=RUN_GUARD_S, check=True)
    assert [json.loads(x)["storeHost"] for x in out.stdout.splitlines()] == ["10.1.2.3:10911"] * 2


@pytest.mark.parametrize("folder", ["missing", "empty"])
def test_follow_refused_at_its_first_frame_leaves_no_checkpoint_commitlog_or_lock_behind(tmp_path, conf, folder):
    """`ha follow` into an empty folder from a master of other segment sizes failed clearly but left `checkpoint`,
    `commitlog/` and `lock` behind: a second try then met a store it had not asked for."""
    ms, master = _master(tmp_path / "m", _cfg(conf))
    slave = tmp_path / "s"
    if folder == "empty":
        slave.mkdir()
    try:
        for msg in _messages(30):
            ms.put_message(msg)
        start = ms.commitlog.max_offset // 16384 * 16384
        out = subprocess.run([RMQTOOL, "ha", "follow", str(slave), "--master", f"127.0.0.1:{master.address[1]}",
                              "--until-caught-up"], capture_output=True, text=True, timeout=RUN_GUARD_S)
    finally:
        master.close()
        ms.close()
    assert (out.returncode, out.stderr.splitlines()[-1]) == (2, (
        f"rmqtool: error: a first frame at offset {start} is not at a segment start of mappedFileSizeCommitLog="
        "1073741824: the master's segments have another size (give its broker.conf with --config)"))
    assert (sorted(slave.iterdir()) if folder == "empty" else slave.exists()) in ([], False)
