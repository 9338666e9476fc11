"""A master: serve a store's commitlog to slaves on its HA port, as the broker's HAService does.

Per slave, a reader takes its reports (the first says where to start, each acknowledges) and a
sender sends frames from there: first a heartbeat at the start offset, then the commitlog's bytes
in frames of at most `haTransferBatchSize` that never cross a segment, a heartbeat once it has
sent all there is (so a slave knows it is level) and every heartbeat interval while idle. A SYNC
put sends its own frames and reads its own ack when the sender and the reader are idle (no thread
hand-off per put; the reader thread steps aside while puts come). A 4.9.3+ master closes a slave
whose report passes its own max offset; this one first sends a heartbeat at its max, so a slave
sees both offsets. Either side closes after the housekeeping interval of silence. The protocol has
no authentication: the listener binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Callable

from rmqtool.engine.message_store import MessageStore
from rmqtool.errors import RmqError
from rmqtool.files.mappedfile import IOV_MAX
from rmqtool.structures import ha

IDLE_WAIT_S = 0.1  # a sender without news looks again this often
SEND_BYTES = 1 << 20  # frames given to the socket in one call at most (each still a frame of the protocol)
POLL_S = 0.2
PUT_QUIET_S = 0.2  # the reader thread reads reports again once SYNC puts have not for this long


class HaMaster:
    def __init__(self, store: MessageStore, bind: str = "127.0.0.1", port: int | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        if store.acks is None:
            raise RmqError("a master's store is opened with SlaveAcks")
        cfg = store.cfg
        self.store, self.acks = store, store.acks
        self.batch = cfg.haTransferBatchSize
        self.heartbeat_s = cfg.haSendHeartbeatInterval / 1000
        self.housekeeping_s = cfg.haHousekeepingInterval / 1000
        self.log = log or (lambda line: None)
        self._stop = threading.Event()
        self._conns: set[SlaveConnection] = set()
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_INET6 if ":" in bind else socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        port = cfg.haListenPort if port is None else port
        try:
            self._listener.bind((bind, port))
        except OSError as e:
            self._listener.close()
            raise RmqError(f"cannot listen on {bind}:{port}: {e.strerror}") from None
        self._listener.listen(16)
        self._listener.settimeout(POLL_S)
        self.address = self._listener.getsockname()[:2]
        self.acks.pusher, self.acks.reader = self.push, self.read_acks
        self._accepter = threading.Thread(target=self._accept, name="rmqtool-ha-accept", daemon=True)
        self._accepter.start()

    @property
    def connections(self) -> int:
        return len(self._conns)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, peer = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn = SlaveConnection(self, sock, f"{peer[0]}:{peer[1]}")
            with self._lock:
                self._conns.add(conn)
            conn.start()

    def push(self) -> bool:
        """Send new bytes to every slave from the caller's thread (see `SlaveConnection.push`); False when
        a sender was busy and must be woken to send them."""
        done = True
        for conn in list(self._conns):
            done = conn.push() and done
        return done

    def read_acks(self, end: int, deadline: float) -> bool:
        """Read acks from a SYNC put's thread (see `SlaveConnection.read_acks`): with one slave connected
        only; False when the put is to wait for another thread's acks."""
        conns = list(self._conns)
        return len(conns) == 1 and conns[0].read_acks(end, deadline)

    def forget(self, conn: SlaveConnection) -> None:
        with self._lock:
            self._conns.discard(conn)

    def close(self) -> None:
        self._stop.set()
        self.acks.pusher = self.acks.reader = None
        self._listener.close()
        self._accepter.join()
        for conn in list(self._conns):
            conn.close()
            conn.join()


class SlaveConnection:
    def __init__(self, master: HaMaster, sock: socket.socket, peer: str) -> None:
        self.master, self.sock, self.peer = master, sock, peer
        self.request: int | None = None  # the first report
        self.ack = 0
        self._closed = threading.Event()
        self._started = threading.Event()
        self._sending = threading.Lock()  # one writer of frames at a time: the sender thread or a SYNC put
        self.next: int | None = None  # where the next frame starts, once the first report said
        self._reports = ha.ReportReader()
        self._last_read = time.monotonic()
        self._owner = threading.Condition()  # who reads the reports: the reader thread or one SYNC put
        self._thread_reading = self._put_reading = False
        self._put_seen = 0.0  # when a SYNC put last wanted the reports
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(None)  # sends block as long as the slave takes; reads wait in `readable`
        self._threads = [threading.Thread(target=self._guard, args=(self._read,), name="rmqtool-ha-read", daemon=True),
                         threading.Thread(target=self._guard, args=(self._send,), name="rmqtool-ha-send", daemon=True)]

    def start(self) -> None:
        self.master.acks.connected()
        for t in self._threads:
            t.start()

    def _guard(self, loop) -> None:
        try:
            loop()
        except OSError:
            pass
        finally:
            self.close()

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        self.master.acks.disconnected()
        self.master.forget(self)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()

    def join(self) -> None:
        """Wait for the reader and sender to end (they hold views of the commitlog while they send)."""
        for t in self._threads:
            if t is not threading.current_thread() and t.is_alive():
                t.join()

    @property
    def _stopping(self) -> bool:
        return self._closed.is_set() or self.master._stop.is_set()

    # ---- the slave's reports ---------------------------------------------------------------
    def _read(self) -> None:
        """Read reports while no SYNC put reads them itself (see `read_acks`); step aside while puts come."""
        while not self._stopping:
            with self._owner:
                if self._put_reading or time.monotonic() - self._put_seen < PUT_QUIET_S:
                    self._owner.wait(PUT_QUIET_S)
                    if self._silent():
                        return
                    continue
                self._thread_reading = True
            try:
                if not readable(self.sock, POLL_S):
                    if self._silent():
                        return
                    continue
                if not self._take(self.sock.recv(4096)):
                    return
            finally:
                with self._owner:
                    self._thread_reading = False

    def read_acks(self, end: int, deadline: float) -> bool:
        """Read the slave's reports from a SYNC put's own thread until one reaches `end` or `deadline` (no
        hand-off from a reader thread); False when another thread holds the reports (its acks wake the put)."""
        with self._owner:
            self._put_seen = time.monotonic()  # the reader thread steps aside after its current read
            if self._thread_reading or self._put_reading or self._closed.is_set():
                return False
            self._put_reading = True
        acks = self.master.acks
        try:
            while acks.highest < end and not self._stopping:
                left = deadline - time.monotonic()
                if left <= 0 or not readable(self.sock, left):
                    break
                if not self._take(self.sock.recv(4096)):
                    self.close()
                    return False
        except (OSError, ValueError):  # the connection went (a closed socket's select is a ValueError)
            self.close()
            return False
        finally:
            with self._owner:
                self._put_reading = False
                self._put_seen = time.monotonic()
            acks.released()
        return not self._stopping  # a closing connection: the put waits out its time on the condition

    def _silent(self) -> bool:
        """Whether the slave was silent for the housekeeping interval (logged)."""
        if time.monotonic() - self._last_read <= self.master.housekeeping_s:
            return False
        self.master.log(f"slave {self.peer}: silent for {self.master.housekeeping_s:g} s; closed")
        return True

    def _take(self, data: bytes) -> bool:
        """Take bytes of the slave's stream: its first report starts the sender, later ones ack; False when
        the connection ends (closed by the slave, or a report past this store's end)."""
        if not data:
            return False
        self._last_read = time.monotonic()
        offset = self._reports.feed(data)
        if offset is None:
            return True
        log = self.master.store.commitlog
        if self.request is None:
            self.request = offset
            self.master.log(f"slave {self.peer}: requests offset {offset}")
            self._started.set()
        elif offset > log.max_offset:
            own = log.max_offset
            self.master.log(f"slave {self.peer}: reports offset {offset}, past this store's {own}: "
                            f"the slave is ahead of its master; closed")
            self._send_frame(own, b"")  # the slave sees both offsets before the close
            return False
        self.ack = offset
        self.master.acks.acked(offset)
        return True

    # ---- frames to the slave ---------------------------------------------------------------
    def _send(self) -> None:
        m = self.master
        while not self._started.wait(POLL_S):
            if self._stopping:
                return
        log = m.store.commitlog
        start = ha.first_transfer(self.request, log.max_offset, log.segment_size)
        if start < log.queue.min_offset:
            m.log(f"slave {self.peer}: asks for offset {start}, before this store's first segment at "
                  f"{log.queue.min_offset}; closed")
            return
        with self._sending:
            self._send_frame(start, b"")
            self.next = start
        caught_up = False  # told the slave it is level, after sending it data
        sent_any = False
        seen = m.acks.generation
        while not self._stopping:
            with self._sending:
                sent = self._send_data(self.next)
                self.next += sent
                if not sent and ((sent_any and not caught_up) or time.monotonic() - self._last_write >= m.heartbeat_s):
                    self._send_frame(self.next, b"")
                    caught_up = caught_up or sent_any
            if sent:
                sent_any = True
                continue
            seen = m.acks.wait_written(seen, min(IDLE_WAIT_S, m.heartbeat_s))

    def push(self) -> bool:
        """Send what there is now from the caller's thread (a SYNC put, which waits for the ack anyway);
        False when the sender holds the connection (it is then to send the new bytes)."""
        if self.next is None:
            return True  # not started: its sender begins with everything there is
        if not self._sending.acquire(blocking=False):
            return False
        log = self.master.store.commitlog
        try:
            while not self._stopping and self.next < log.max_offset and (sent := self._send_data(self.next)):
                self.next += sent
        except OSError:
            pass  # the connection went: its reader and sender see it too
        finally:
            self._sending.release()
        return True

    def _send_data(self, offset: int) -> int:
        """Send the frames the commitlog holds from `offset` on in its segment, up to SEND_BYTES, with one
        call (each frame as the protocol cuts it); the bytes of commitlog sent."""
        log = self.master.store.commitlog
        mf = log.queue.find(offset)
        if mf is None:
            return 0
        written_end = mf.from_offset + mf.wrote
        parts: list = []
        at = offset
        with memoryview(mf.map) as whole:
            while at - offset < SEND_BYTES and len(parts) < IOV_MAX:
                size = ha.frame_size(at, written_end, log.segment_size, self.master.batch)
                if size <= 0:
                    break
                pos = at - mf.from_offset
                parts += (ha.encode_header(at, size), whole[pos : pos + size])
                at += size
            if parts:
                self._send_parts(parts)
            for part in parts[1::2]:
                part.release()
        return at - offset

    def _send_frame(self, offset: int, body) -> None:
        self._send_parts([ha.encode_header(offset, len(body))] + ([body] if body else []))

    def _send_parts(self, parts: list) -> None:
        sent = self.sock.sendmsg(parts)
        total = sum(len(p) for p in parts)
        if sent < total:  # the socket took part: the rest as it can
            for part in parts:
                if sent >= len(part):
                    sent -= len(part)
                    continue
                self.sock.sendall(part[sent:])
                sent = 0
        self._last_write = time.monotonic()


def readable(sock: socket.socket, timeout_s: float) -> bool:
    """Whether `sock` has bytes (or its end) to read within `timeout_s`."""
    return bool(select.select([sock], [], [], timeout_s)[0])
