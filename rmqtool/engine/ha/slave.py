"""A slave: follow a master's HA port into a store, as the broker's HAClient does.

One connection at a time. On connect the slave reports its commitlog's max offset (at once,
where the Java slave waits a heartbeat interval first); every frame must start at the slave's
max offset (an empty slave takes any) and is appended as it came; consume queues and the index
follow through the store's dispatcher. Acknowledgements: `flushed` (the default) reports an offset
only once the commitlog is fdatasync'ed up to it, by a flusher thread that groups whatever arrived
meanwhile; `written` reports after every read, as the Java slave does. Reports also go out every
heartbeat interval; a master silent for the housekeeping interval is dropped and dialled again.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field

from rmqtool.engine.message_store import MessageStore
from rmqtool.errors import RmqError
from rmqtool.structures import ha

ACK_FLUSHED, ACK_WRITTEN = "flushed", "written"
RECV_BYTES = 4 << 20
POLL_S = 0.2  # how often a blocked read looks at the stop flag
AHEAD_CLOSES = 2  # closes without data after our report, in a row, that mean the master holds less


class Diverged(RmqError):
    """The store does not line up with its master."""


@dataclass
class FollowStatus:
    """What the slave knows, for a status line."""

    master: str
    connected: bool = False
    own: int = 0  # the store's max offset
    acked: int = 0  # the last offset reported to the master
    master_offset: int = 0  # the furthest the master has shown: a frame's end or a heartbeat's offset
    behind_since: float | None = None  # monotonic time since which the store has been behind what the master showed
    received: int = 0  # bytes received since the start
    connects: int = 0
    heartbeats: int = 0  # empty frames received
    caught_up: bool = False  # a heartbeat at our own end: the master had nothing more to send
    first_data_at: float | None = None  # monotonic time of the first data frame
    level_at: float | None = None  # ... and of the first time level after it, all of it acknowledged
    started: float = field(default_factory=time.monotonic)

    def note_level(self) -> None:
        """Time the first moment level with the master, everything received acknowledged, after data came."""
        if self.level_at is None and self.first_data_at is not None and self.caught_up and self.acked >= self.own:
            self.level_at = time.monotonic()

    def note_progress(self) -> None:
        """After the master showed an offset or the store grew: since when the store has been behind."""
        if self.master_offset <= self.own:
            self.behind_since = None
        elif self.behind_since is None:
            self.behind_since = time.monotonic()

    def to_json(self) -> dict:
        now = time.monotonic()
        lag_ms = 0 if self.behind_since is None else int((now - self.behind_since) * 1000)
        moving = (self.level_at or now) - self.first_data_at if self.first_data_at is not None else 0
        return {"master": self.master, "connected": self.connected, "ownOffset": self.own, "ackedOffset": self.acked,
                "masterOffset": self.master_offset, "lagBytes": max(0, self.master_offset - self.own),
                "lagMs": lag_ms, "receivedBytes": self.received, "connections": self.connects,
                "mbPerSecond": round(self.received / moving / 1e6, 1) if moving > 0 else 0.0,
                "heartbeats": self.heartbeats, "caughtUp": self.caught_up,
                "transferSeconds": round(self.level_at - self.first_data_at, 3)
                if self.level_at is not None and self.first_data_at is not None else None}


class Follower:
    def __init__(self, store: MessageStore, host: str, port: int, *, ack: str = ACK_FLUSHED,
                 stop: threading.Event | None = None) -> None:
        if ack not in (ACK_FLUSHED, ACK_WRITTEN):
            raise RmqError(f"--ack must be {ACK_FLUSHED} or {ACK_WRITTEN}, not {ack!r}")
        cfg = store.cfg
        self.store, self.host, self.port, self.ack = store, host, port, ack
        self.heartbeat_s = cfg.haSendHeartbeatInterval / 1000
        self.housekeeping_s = cfg.haHousekeepingInterval / 1000
        self.reconnect_s = min(ha.RECONNECT_MS / 1000, self.heartbeat_s)
        self.stop = stop or threading.Event()
        self.status = FollowStatus(f"{host}:{port}", own=store.commitlog.max_offset)
        self._send_lock = threading.Lock()
        self._silent_closes = 0

    def run(self, until_caught_up: bool = False) -> None:
        """Follow until `stop` is set (or, with `until_caught_up`, until level with the master). A store
        that does not line up with the master raises `Diverged`; a lost connection is dialled again."""
        while not self.stop.is_set():
            try:
                sock = socket.create_connection((self.host, self.port), timeout=self.housekeeping_s)
            except OSError:
                self.stop.wait(self.reconnect_s)
                continue
            try:
                self._session(sock, until_caught_up)
            except OSError:
                pass
            finally:
                self.status.connected = False
                sock.close()
            if until_caught_up and self.status.caught_up:
                return
            if not self.stop.is_set():
                self.stop.wait(self.reconnect_s)

    # ---- one connection --------------------------------------------------------------------
    def _session(self, sock: socket.socket, until_caught_up: bool) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(POLL_S)  # a read waits this long, then looks at the stop flag (reports are 8 bytes)
        st = self.status
        st.connected, st.connects, st.caught_up = True, st.connects + 1, False
        self._frames_in_session = 0
        reported = self.store.commitlog.max_offset
        self._report(sock, reported)
        flusher = _Flusher(self, sock) if self.ack == ACK_FLUSHED else None
        frames = ha.FrameReader(RECV_BYTES)
        last_read = time.monotonic()
        data_frames = 0
        try:
            while not self.stop.is_set():
                if until_caught_up and st.caught_up and st.acked >= st.own:
                    return
                try:
                    with frames.space() as room:
                        n = sock.recv_into(room)
                except TimeoutError:
                    now = time.monotonic()
                    if now - last_read > self.housekeeping_s:
                        return  # the master went silent
                    if flusher is None and now - self._last_report > self.heartbeat_s:
                        self._report(sock, self.store.commitlog.max_offset)
                    continue
                if n == 0:
                    self._closed_by_master(reported, data_frames)
                    return
                last_read = time.monotonic()
                st.received += n
                frames.wrote(n)
                try:
                    data_frames += self._apply(frames)
                except ValueError as e:
                    raise Diverged(f"the master at {st.master} sent a malformed frame: {e}") from None
                if flusher is not None:
                    flusher.wake()
                elif self.store.commitlog.max_offset > st.acked:
                    self._report(sock, self.store.commitlog.max_offset)
        finally:
            if flusher is not None:
                flusher.close()

    def _apply(self, frames: ha.FrameReader) -> int:
        """Append every whole frame (data frames that follow each other in one segment with one write);
        the number of data frames."""
        st, store = self.status, self.store
        segment = store.commitlog.segment_size
        end = store.commitlog.max_offset  # with the frames taken but not yet written
        run: list = []  # data frames to write at `run_at`
        run_at = data = 0
        try:
            for offset, body in frames.frames():
                if not ha.follows(end, offset):
                    raise Diverged(f"the master at {st.master} sent a frame at offset {offset}, but this store ends "
                                   f"at {end}: they do not line up (`rmqtool diff` with a copy of the master's store "
                                   f"shows where)")
                size = len(body)
                if run and (not size or offset // segment != run_at // segment):
                    self._write(run_at, run)
                if size:
                    run_at = offset if not run else run_at
                    run.append(body)
                    end = offset + size
                    data += 1
                    self._silent_closes = 0
                    st.caught_up = False
                    if st.first_data_at is None:
                        st.first_data_at = time.monotonic()
                else:
                    store.append_replica(offset)  # an empty store's first file is made by a heartbeat too
                    body.release()
                    end = st.own = store.commitlog.max_offset
                    st.heartbeats += 1
                    # the first frame of a connection is a heartbeat at the start, whatever the master holds
                    st.caught_up = st.caught_up or (offset == end and self._frames_in_session > 0)
                    st.note_level()
                st.master_offset = max(st.master_offset, offset + size)
                st.note_progress()
                self._frames_in_session += 1
            if run:
                self._write(run_at, run)
        finally:
            for body in run:
                body.release()
        return data

    def _write(self, offset: int, run: list) -> None:
        self.store.append_replica(offset, *run)
        for body in run:
            body.release()
        run.clear()
        self.status.own = self.store.commitlog.max_offset
        self.status.note_progress()

    def _closed_by_master(self, reported: int, data_frames: int) -> None:
        """A master that closes on us again and again without sending a byte holds less than we reported."""
        if data_frames:
            self._silent_closes = 0
            return
        self._silent_closes += 1
        if self._silent_closes >= AHEAD_CLOSES and reported > 0:
            raise Diverged(f"the master at {self.status.master} closed the connection {self._silent_closes} times "
                           f"after this store reported offset {reported}, without sending a byte: a 4.9.3+ master "
                           f"does so when it holds less (its offset is not on the wire); this store is ahead of it "
                           f"(`rmqtool diff` with a copy of the master's store shows where)")

    def _report(self, sock: socket.socket, offset: int) -> None:
        with self._send_lock:
            sock.sendall(ha.encode_report(offset))
            self._last_report = time.monotonic()
            self.status.acked = offset
            self.status.note_level()


class _Flusher:
    """Acknowledge only what is durable: fdatasync what arrived, then report it; a heartbeat report
    when nothing arrived for an interval."""

    def __init__(self, follower: Follower, sock: socket.socket) -> None:
        self.follower, self.sock = follower, sock
        self._wake = threading.Event()
        self._closing = False
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="rmqtool-ha-flush", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        if self.error is not None:
            raise self.error
        self._wake.set()

    def _loop(self) -> None:
        f = self.follower
        try:
            while not self._closing:
                self._wake.wait(f.heartbeat_s)
                self._wake.clear()
                if self._closing:
                    return
                if f.store.commitlog.max_offset > f.status.acked:
                    f._report(self.sock, f.store.flush_log())
                elif time.monotonic() - f._last_report >= f.heartbeat_s:
                    f._report(self.sock, f.status.acked)
        except OSError:
            return  # the connection went: the reader sees it too
        except BaseException as e:
            self.error = e

    def close(self) -> None:
        self._closing = True
        self._wake.set()
        self._thread.join()
