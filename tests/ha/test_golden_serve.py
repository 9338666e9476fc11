"""The golden HA captures replayed against rmqtool's master: fed the real 4.9.7 slave's first report,
and given the master's puts one at a time as the SYNC_MASTER took them, it must send the frames the
real 4.9.7 master sent."""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path

import pytest
from cli_helpers import RUN_GUARD_S
from ha_wire import SEGMENT, cut_commitlog, frames, read_frame, reports, stream, wire

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.ha.acks import SlaveAcks
from rmqtool.engine.ha.master import HaMaster
from rmqtool.engine.message_store import MessageStore

DEADLINE_S = RUN_GUARD_S


def _captured_phase(root: Path) -> dict:
    phases = json.loads((root / "statuses.json").read_text())["phases"]
    return [p for p in phases if p.get("inScenario", True) and p["statuses"].get("PUT_OK")][-1]


def _master(root: Path, tmp_path: Path, at: int) -> MessageStore:
    store = tmp_path / "master"
    cut_commitlog(root / "master" / "store" / "commitlog", store / "commitlog", at)
    cfg, _ = StoreConfig.from_file(root / "master" / "broker.conf")
    return MessageStore(store, cfg, acks=SlaveAcks(cfg.haSlaveFallbehindMax, cfg.slaveTimeout))


def _put(ms: MessageStore, final: Path, end: int) -> None:
    """The master's next put, as the bytes it wrote: from its end to `end`, a segment at a time."""
    at = ms.commitlog.max_offset
    while at < end:
        seg = at - at % SEGMENT
        upto = min(end, seg + SEGMENT)
        with open(final / f"{seg:020d}", "rb") as f:
            f.seek(at - seg)
            ms.append_replica(at, f.read(upto - at))
        at = upto


def _data_frames(sock: socket.socket, until: int, got: list) -> int:
    """Read frames until the slave holds `until`, reporting after each data frame as the Java slave does."""
    held = got[-1][0] + got[-1][1] if got else 0
    while held < until:
        offset, body = read_frame(sock)
        got.append((offset, len(body)))
        if body:
            held = offset + len(body)
            sock.sendall(struct.pack(">q", held))
    return held


@pytest.mark.parametrize("scenario", ["sync", "resume"])
def test_master_sends_the_java_masters_frames(golden_ha, tmp_path, scenario):
    root = golden_ha / scenario
    rows = wire(root)
    phase = _captured_phase(root)
    expected = [f for f in frames(stream(rows, 1, "m2s")) if f[1]]
    first_report = reports(stream(rows, 1, "s2m"))[0]
    ms = _master(root, tmp_path, phase["maxPhyOffsetBeforePut"])
    master = HaMaster(ms, port=0)
    got: list[tuple[int, int]] = []
    try:
        with socket.create_connection(master.address, timeout=DEADLINE_S) as sock:
            sock.sendall(struct.pack(">q", first_report))
            start = read_frame(sock)
            assert start == (expected[0][0], b"")  # a heartbeat at the start offset first
            _data_frames(sock, phase["maxPhyOffsetBeforePut"], got)
            put_rows = phase["puts"]["rows"]
            columns = phase["puts"]["columns"]
            for row in put_rows:
                put = dict(zip(columns, row, strict=True))
                end = put["wroteOffset"] + put["wroteBytes"]
                _put(ms, root / "master" / "store" / "commitlog", end)
                _data_frames(sock, end, got)
    finally:
        master.close()
        ms.close()
    assert [f for f in got if f[1]] == expected


def test_master_closes_a_slave_ahead_after_its_second_report_naming_its_own_end(golden_ha, tmp_path):
    root = golden_ha / "ahead"
    rows = wire(root)
    expected = frames(stream(rows, 1, "m2s"))
    first_report = reports(stream(rows, 1, "s2m"))[0]
    ms = _master(root, tmp_path, 249824)
    lines: list[str] = []
    master = HaMaster(ms, port=0, log=lines.append)
    try:
        with socket.create_connection(master.address, timeout=DEADLINE_S) as sock:
            sock.sendall(struct.pack(">q", first_report))
            assert [read_frame(sock)] == [(o, b"") for o, _ in expected]  # the Java master's one heartbeat
            sock.sendall(struct.pack(">q", first_report))
            assert read_frame(sock) == (249824, b"")  # this master's end, before it closes
            assert sock.recv(1) == b""
    finally:
        master.close()
        ms.close()
    assert any("reports offset 324301, past this store's 249824" in line for line in lines)
