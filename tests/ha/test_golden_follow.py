"""The golden HA captures replayed into rmqtool's follower: a real 4.9.7 master's frames, chunk for
chunk as they crossed the wire, must leave the slave's store the real 4.9.7 slave left."""

from __future__ import annotations

import dataclasses
import shutil
import socket
import struct
import threading
from pathlib import Path

import pytest
from cli_helpers import RUN_GUARD_S
from ha_wire import frames, recv_exact, reports, stream, wire

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.ha.slave import Diverged, Follower
from rmqtool.engine.message_store import MessageStore

DEADLINE_S = RUN_GUARD_S


@pytest.fixture
def ha_golden(golden_ha: Path) -> Path:
    return golden_ha


def _slave_config(ha_golden: Path, heartbeat_ms: int = 200) -> StoreConfig:
    cfg, _ = StoreConfig.from_file(ha_golden / "sync" / "slave" / "broker.conf")
    return dataclasses.replace(cfg, haSendHeartbeatInterval=heartbeat_ms)


class RecordedMaster:
    """Plays a scenario's master side connection by connection: waits for the slave's first report, sends
    the recorded stream, and closes once the slave has acknowledged its end (or, `ahead`, reported once more)."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows
        self.conns = sorted({r["conn"] for r in rows})
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(DEADLINE_S)
        self.port = self.listener.getsockname()[1]
        self.first_reports: list[int] = []
        self.reports: list[int] = []
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._play, daemon=True)
        self.thread.start()

    def _play(self) -> None:
        try:
            for conn in self.conns:
                sock, _ = self.listener.accept()
                sock.settimeout(DEADLINE_S)
                with sock:
                    self.first_reports.append(struct.unpack(">q", recv_exact(sock, 8))[0])
                    data = stream(self.rows, conn, "m2s")
                    sock.sendall(data)
                    sent = frames(data)
                    end = max(o + s for o, s in sent)
                    while True:
                        offset = struct.unpack(">q", recv_exact(sock, 8))[0]
                        self.reports.append(offset)
                        if offset >= end:
                            break
        except BaseException as e:  # raised in the test's thread
            self.error = e
        finally:
            self.listener.close()


def _follow(store: Path, cfg: StoreConfig, master: RecordedMaster) -> None:
    ms = MessageStore(store, cfg)
    stop = threading.Event()
    follower = Follower(ms, "127.0.0.1", master.port, stop=stop)
    runner = threading.Thread(target=follower.run, daemon=True)
    runner.start()
    master.thread.join(DEADLINE_S)
    stop.set()
    runner.join(DEADLINE_S)
    ms.close_replica()
    assert not master.thread.is_alive() and not runner.is_alive()
    if master.error:
        raise master.error


def _same_tree(ours: Path, theirs: Path) -> None:
    mine = sorted(p.relative_to(ours) for p in ours.rglob("*") if p.is_file())
    real = sorted(p.relative_to(theirs) for p in theirs.rglob("*") if p.is_file())
    assert mine == real
    for rel in real:
        assert (ours / rel).read_bytes() == (theirs / rel).read_bytes(), rel


@pytest.mark.parametrize(("scenario", "start_empty"), [("sync", True), ("resume", False)])
def test_replayed_frames_leave_the_java_slaves_commitlog_and_queues(ha_golden, tmp_path, scenario, start_empty):
    root = ha_golden / scenario
    rows = wire(root)
    store = tmp_path / "slave"
    if start_empty:
        store.mkdir()
    else:
        shutil.copytree(ha_golden / "sync" / "slave" / "store", store)
    master = RecordedMaster(rows)
    _follow(store, _slave_config(ha_golden), master)
    assert master.first_reports == [reports(stream(rows, 1, "s2m"))[0]]
    _same_tree(store / "commitlog", root / "slave" / "store" / "commitlog")
    _same_tree(store / "consumequeue", root / "slave" / "store" / "consumequeue")
    ends = {o + s for o, s in frames(stream(rows, 1, "m2s"))}
    assert master.reports == sorted(master.reports) and set(master.reports) <= ends


def test_index_of_a_replayed_slave_holds_the_java_slaves_entries(ha_golden, tmp_path):
    root = ha_golden / "sync"
    store = tmp_path / "slave"
    store.mkdir()
    _follow(store, _slave_config(ha_golden), RecordedMaster(wire(root)))
    ours = [p.read_bytes() for p in sorted((store / "index").iterdir())]
    theirs = [p.read_bytes() for p in sorted((root / "slave" / "store" / "index").iterdir())]
    assert ours == theirs


def test_slave_ahead_of_a_java_master_is_refused_naming_its_offset(ha_golden, tmp_path):
    root = ha_golden / "ahead"
    store = tmp_path / "slave"
    shutil.copytree(ha_golden / "sync" / "slave" / "store", store)
    before = {p.name: p.read_bytes() for p in (store / "commitlog").iterdir()}
    rows = [r for r in wire(root) if r["conn"] <= 2]
    master = RecordedMaster(rows)
    ms = MessageStore(store, _slave_config(ha_golden))
    try:
        with pytest.raises(Diverged, match=r"closed the connection 2 times after this store reported offset 324301"):
            Follower(ms, "127.0.0.1", master.port).run()
    finally:
        ms.close_replica()
    master.thread.join(DEADLINE_S)
    assert master.first_reports == [324301, 324301]
    assert {p.name: p.read_bytes() for p in (store / "commitlog").iterdir()} == before
