"""Small stores of the 5.x kinds no broker-written golden covers, made with rmqtool's codecs from the
fixture store's records: a DLedger commitlog, a timer log, 5.x traces on file queues, batch queues."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

from rmqtool.format import checkpoint, consumequeue, dledger, index, message, timerlog
from rmqtool.store.paths import offset_name
from rmqtool.store.reader import StoreReader

SEGMENT = 65536
_POS = struct.Struct(">q")


def fixture_records(store: Path) -> list[bytes]:
    """Every record of the store's commitlog, as stored."""
    reader = StoreReader(store)
    out = []
    for chunk in reader.scan():
        b = chunk.batch
        if b is None:
            continue
        for off, size in zip(b.offsets.tolist(), b.cols["totalSize"].tolist(), strict=True):
            out.append(reader.read_bytes(off, size))
    return out


def make_dledger_store(src: Path, dst: Path, segment: int = SEGMENT) -> dict[int, int]:
    """`dst` with `dledger-n0/data` holding src's records wrapped in DLedger entries (rolling with
    blanks as the DLedger file list does) and src's consume queues re-pointed at the new offsets.
    Returns {old offset: new offset}."""
    data = dst / f"dledger-n0/{dledger.DATA_DIR}"
    data.mkdir(parents=True)
    (dst / "dledger-n0" / dledger.INDEX_DIR).mkdir()
    moved: dict[int, int] = {}
    seg_start, buf = 0, bytearray()
    for i, rec in enumerate(fixture_records(src)):
        total = dledger.BODY_OFFSET + len(rec)
        if len(buf) + total + dledger.BLANK_LEN > segment:
            left = segment - len(buf)
            buf += struct.pack(">ii", dledger.BLANK_MAGIC, left) + bytes(left - dledger.BLANK_LEN)
            (data / offset_name(seg_start)).write_bytes(bytes(buf))
            seg_start, buf = seg_start + segment, bytearray()
        pos = seg_start + len(buf)
        body = bytearray(rec)
        old = _POS.unpack_from(body, message.PHYSICAL_OFFSET_OFFSET)[0]
        _POS.pack_into(body, message.PHYSICAL_OFFSET_OFFSET, pos + dledger.BODY_OFFSET)
        moved[old] = pos + dledger.BODY_OFFSET
        buf += dledger.ENTRY.codec.pack(dledger.ENTRY_MAGIC, total, i, 1, pos, 0, 0, 0, len(rec)) + body
    (data / offset_name(seg_start)).write_bytes(bytes(buf) + bytes(segment - len(buf)))
    for qfile in (src / "consumequeue").glob("*/*/*"):
        entries = consumequeue.decode_entries(qfile.read_bytes()).copy()
        n = consumequeue.written_count(entries)
        entries["commitLogOffset"][:n] = [moved[int(o)] for o in entries["commitLogOffset"][:n]]
        out = dst / qfile.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(entries.tobytes())
    shutil.copy(src / "checkpoint", dst / "checkpoint")
    _move_index(src / "index", dst / "index", moved)
    return moved


def _move_index(src: Path, dst: Path, moved: dict[int, int], hash_slots: int = 64) -> None:
    """src's index files with every physical offset (entries, header begin/end) re-pointed by `moved`."""
    import numpy as np

    dst.mkdir()
    for f in sorted(src.iterdir()):
        buf = bytearray(f.read_bytes())
        head = index.decode_header(buf)
        count = int(head["indexCount"])
        at = index.HEADER_LEN + hash_slots * index.SLOT_LEN
        entries = np.frombuffer(buf, dtype=index.ENTRY.dtype(), count=count, offset=at).copy()
        live = entries["phyOffset"][index.FIRST_INDEX:]
        entries["phyOffset"][index.FIRST_INDEX:] = [moved.get(int(o), int(o)) for o in live]
        buf[at : at + entries.nbytes] = entries.tobytes()
        for name in ("beginPhyOffset", "endPhyOffset"):
            pos = index.HEADER.offset(name)
            old = _POS.unpack_from(buf, pos)[0]
            _POS.pack_into(buf, pos, moved.get(old, old))
        (dst / f.name).write_bytes(bytes(buf))


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
