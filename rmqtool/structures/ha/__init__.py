"""The HA wire: what a 4.9 master and slave exchange on the master's HA port.

No preamble, no authentication, big-endian. The slave sends 8-byte reports, each its commitlog's
max offset ("I hold everything below this"); the master reads only the newest complete one: the
first names where to start, every one acknowledges. The master sends frames
`[int64 offset][int32 size][size commitlog bytes]`: at most `haTransferBatchSize` bytes, never
across a commitlog segment, cutting records at any byte; size 0 is a heartbeat. Frames of one
connection are contiguous. A slave that holds nothing gets bytes from the start of the master's
last segment; any other from exactly the offset it reported.
"""

from __future__ import annotations

from rmqtool.structures.layout import Layout

FRAME_HEADER = Layout.of(("offset", ">i8"), ("size", ">i4"))
REPORT = Layout.of(("offset", ">i8"))
HEADER_LEN = FRAME_HEADER.size  # 12
REPORT_LEN = REPORT.size  # 8
_HEADER = FRAME_HEADER.codec
_REPORT = REPORT.codec

# broker.conf keys and their 4.9.7 defaults
DEFAULT_LISTEN_PORT = 10912  # haListenPort: the broker's listen port + 1
DEFAULT_HEARTBEAT_MS = 5000  # haSendHeartbeatInterval: reports and idle heartbeats
DEFAULT_HOUSEKEEPING_MS = 20000  # haHousekeepingInterval: silence after which either side closes
DEFAULT_BATCH = 32768  # haTransferBatchSize: the largest frame body
DEFAULT_FALLBEHIND = 256 << 20  # haSlaveFallbehindMax: a slave further behind is not available
DEFAULT_SLAVE_TIMEOUT_MS = 3000  # slaveTimeout: how long a SYNC_MASTER put waits for an ack
RECONNECT_MS = 5000  # a slave tries its master again this often


def encode_header(offset: int, size: int) -> bytes:
    return _HEADER.pack(offset, size)


def encode_report(offset: int) -> bytes:
    return _REPORT.pack(offset)


def first_transfer(reported: int, master_max: int, segment_size: int) -> int:
    """Where a master starts sending to a slave whose first report is `reported`."""
    if reported == 0:
        return master_max - master_max % segment_size
    return reported


def frame_size(offset: int, readable_end: int, segment_size: int, batch: int) -> int:
    """The body size of the next frame from `offset` when the master has written up to
    `readable_end`: never past the segment holding `offset`, never over `batch`."""
    segment_end = offset - offset % segment_size + segment_size
    return max(0, min(readable_end, segment_end, offset + batch) - offset)


def follows(slave_max: int, frame_offset: int) -> bool:
    """Whether a slave holding up to `slave_max` takes a frame at `frame_offset` (an empty slave takes any)."""
    return slave_max == 0 or slave_max == frame_offset


class ReportReader:
    """The master's side of the slave's stream: bytes in, the newest complete report out."""

    def __init__(self) -> None:
        self._partial = b""

    def feed(self, data: bytes) -> int | None:
        """The newest report completed by `data`, or None when `data` completes none."""
        buf = self._partial + data
        whole = len(buf) - len(buf) % REPORT_LEN
        self._partial = buf[whole:]
        if whole == 0:
            return None
        return _REPORT.unpack_from(buf, whole - REPORT_LEN)[0]


class FrameReader:
    """The slave's side of the master's stream: bytes in, whole frames out, without copying them.

    Bytes are read into `space()` (a socket's `recv_into`) and counted with `wrote(n)`; `frames()` yields
    (offset, body) for every frame complete in what was read, a body being a memoryview into the
    reader's buffer: release it before the next `space()`. A frame that declares a negative size is a
    ValueError (the stream cannot be followed past it).
    """

    MIN_READ = 64 << 10  # room a read is given at least

    def __init__(self, capacity: int = 4 << 20) -> None:
        self._buf = bytearray(capacity)
        self._start = self._end = 0  # unread bytes are [start, end)
        self._need = HEADER_LEN  # bytes the frame at `start` takes, once its header is in

    def space(self) -> memoryview:
        """Where the next bytes go (moving the unread tail to the front, or growing, when short of room)."""
        held = self._end - self._start
        if len(self._buf) - self._end < max(self._need - held, self.MIN_READ):
            if self._need + self.MIN_READ > len(self._buf):
                self._buf.extend(bytes(self._need + self.MIN_READ - len(self._buf)))
            self._buf[:held] = self._buf[self._start : self._end]
            self._start, self._end = 0, held
        return memoryview(self._buf)[self._end :]

    def wrote(self, n: int) -> None:
        self._end += n

    def frames(self):
        buf = self._buf
        with memoryview(buf) as view:
            while self._end - self._start >= HEADER_LEN:
                offset, size = _HEADER.unpack_from(buf, self._start)
                if size < 0:
                    raise ValueError(f"frame at offset {offset} declares {size} bytes")
                end = self._start + HEADER_LEN + size
                if end > self._end:
                    self._need = HEADER_LEN + size
                    return
                body = view[self._start + HEADER_LEN : end]
                self._start = end
                yield offset, body
            self._need = HEADER_LEN

    @property
    def pending(self) -> int:
        """Bytes held that do not yet make a whole frame."""
        return self._end - self._start
