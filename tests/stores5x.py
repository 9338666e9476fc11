"""Small stores of the 5.x kinds no broker-written golden covers, made with rmqtool's codecs from the
fixture store: a timer log, 5.x traces on file queues, batch queues (DLedger and RocksDB layouts:
`rmqtool.bench.layouts`)."""

from __future__ import annotations

import shutil
import zlib
from pathlib import Path

from rmqtool.files.paths import offset_name
from rmqtool.structures import checkpoint, timerlog


def make_timer_store(src: Path, dst: Path, units: list[tuple[int, int, int, int]], file_size: int = 52 * 3 + 16) \
        -> None:
    """A copy of `src` with a timer store whose log holds `units` = (commitLogOffset, size, writeTime,
    delayMs): three units per segment of `file_size` bytes, then a blank, as the timer log rolls."""
    shutil.copytree(src, dst)
    log = dst / "timerlog"
    log.mkdir()
    seg_start, buf, prev = 0, bytearray(), -1
    for offset, size, write_time, delay in units:
        if len(buf) + timerlog.UNIT_LEN + timerlog.BLANK_LEN > file_size:
            left = file_size - len(buf)
            buf += timerlog.encode_blank(left) + bytes(left - timerlog.BLANK_LEN)
            (log / offset_name(seg_start)).write_bytes(bytes(buf))
            seg_start, buf = seg_start + file_size, bytearray()
        here = seg_start + len(buf)
        buf += timerlog.encode_unit(prev, timerlog.MAGIC_DEFAULT, write_time, delay, offset, size, 7)
        prev = here
    (log / offset_name(seg_start)).write_bytes(bytes(buf) + bytes(file_size - len(buf)))
    (dst / "timerwheel").write_bytes(bytes(32 * 16))
    (dst / "timercheck").write_bytes(bytes(32))


def make_5x_checkpoint_store(src: Path, dst: Path) -> None:
    """A copy of `src` whose checkpoint holds the 5.x longs (a 5.x broker with file consume queues)."""
    shutil.copytree(src, dst)
    cp = checkpoint.decode((src / "checkpoint").read_bytes())
    page = checkpoint.encode(checkpoint.Checkpoint(cp.physicMsgTimestamp, cp.logicsMsgTimestamp,
                                                   cp.indexMsgTimestamp, 151686, 151686))
    (dst / "checkpoint").write_bytes(page)


def make_batch_queue_store(src: Path, dst: Path) -> None:
    """A copy of `src` with a 5.x batch consume queue folder for one topic."""
    shutil.copytree(src, dst)
    (dst / "batchconsumequeue" / "BatchTopic" / "0").mkdir(parents=True)


def write_epoch_file(root: Path, entries: list[tuple[int, int]], *, count: int | None = None,
                     crc: int | None = None) -> bytes:
    """`root/epochFileCheckpoint` as the 5.x broker's CheckpointFile writes `entries` (epoch, startOffset): the
    count, the entry lines' CRC32 masked to 31 bits (UtilAll.crc32), the lines; written by MixAll.string2File:
    the file's old text to `.bak`, then the file. `count` and `crc` replace what the broker would write."""
    lines = "".join(f"{epoch}-{start}\n" for epoch, start in entries)
    crc = zlib.crc32(lines.encode()) & 0x7FFFFFFF if crc is None else crc
    text = f"{len(entries) if count is None else count}\n{crc}\n{lines}".encode()
    path = root / "epochFileCheckpoint"
    if path.exists():
        (root / "epochFileCheckpoint.bak").write_bytes(path.read_bytes())
    path.write_bytes(text)
    return text


def make_ha_store(src: Path, dst: Path) -> None:
    """A 5.x store of a broker in controller mode: the 5.x checkpoint, three epochs appended one at a time (the
    `.bak` holds the first two) and the identity the controller gave it."""
    make_5x_checkpoint_store(src, dst)
    for n in (1, 2, 3):
        write_epoch_file(dst, [(1, 0), (2, 1000), (5, 151686)][:n])
    (dst / "brokerIdentity").write_text("DefaultCluster#broker-a#2")
