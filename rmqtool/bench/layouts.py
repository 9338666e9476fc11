"""A plain 4.x store rewritten in a 5.x layout, for benches and tests of the 5.x readers: the log
wrapped in DLedger entries, or the consume queues moved into a RocksDB database. Never run on
an operator's store: the output is always a new folder.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

from rmqtool.engine.reader import StoreReader
from rmqtool.files.paths import offset_name
from rmqtool.structures import consumequeue, dledger, index
from rmqtool.structures.commitlog import message
from rmqtool.structures.consumequeue import rockskeys as rocksqueue
from rmqtool.structures.index.chain import entry_bound

LAYOUTS = ("plain", "dledger", "rocksdb")
_POS = struct.Struct(">q")


def records(store: Path) -> list[tuple[int, bytes]]:
    """(offset, stored bytes) of every record of the store's log."""
    out = []
    for chunk in StoreReader(store).scan(verify_crc=False):
        b = chunk.batch
        if b is None:
            continue
        for pos, size in zip(b.pos.tolist(), b.cols["totalSize"].tolist(), strict=True):
            out.append((b.base + pos, bytes(b.buf[pos : pos + size])))
    return out


def to_dledger(src: Path, dst: Path, segment: int | None = None) -> dict[int, int]:
    """`dst` holding src's records wrapped in DLedger entries under `dledger-n0/data` (rolling with a
    blank as DLedger's file list does), src's queues and index re-pointed at the new offsets and its
    checkpoint. Returns {old offset: new offset}."""
    segment = segment or StoreReader(src).segment_size
    data = dst / f"dledger-n0/{dledger.DATA_DIR}"
    data.mkdir(parents=True)
    (dst / "dledger-n0" / dledger.INDEX_DIR).mkdir()
    moved: dict[int, int] = {}
    seg_start, buf = 0, bytearray()
    for i, (old, rec) in enumerate(records(src)):
        total = dledger.BODY_OFFSET + len(rec)
        if len(buf) + total + dledger.BLANK_LEN > segment:
            left = segment - len(buf)
            buf += struct.pack(">ii", dledger.BLANK_MAGIC, left) + bytes(left - dledger.BLANK_LEN)
            (data / offset_name(seg_start)).write_bytes(bytes(buf))
            seg_start, buf = seg_start + segment, bytearray()
        pos = seg_start + len(buf)
        moved[old] = pos + dledger.BODY_OFFSET
        buf += dledger.ENTRY.codec.pack(dledger.ENTRY_MAGIC, total, i, 1, pos, 0, 0, 0, len(rec))
        at = len(buf)
        buf += rec
        _POS.pack_into(buf, at + message.PHYSICAL_OFFSET_OFFSET, pos + dledger.BODY_OFFSET)
    with open(data / offset_name(seg_start), "wb") as last:  # the unwritten tail stays a hole, as the broker's
        last.write(buf)
        last.truncate(segment)
    for qfile in (src / "consumequeue").glob("*/*/*"):
        entries = consumequeue.decode_entries(qfile.read_bytes()).copy()
        n = consumequeue.written_count(entries)
        entries["commitLogOffset"][:n] = [moved[int(o)] for o in entries["commitLogOffset"][:n]]
        out = dst / qfile.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(entries.tobytes())
    shutil.copy(src / "checkpoint", dst / "checkpoint")
    _move_index(StoreReader(src), dst / "index", moved)
    return moved


def _move_index(reader: StoreReader, dst: Path, moved: dict[int, int]) -> None:
    """The reader's index files with every physical offset (entries, header begin/end) re-pointed."""
    import numpy as np

    dst.mkdir()
    files = reader.index_files()
    for path in reader.index_paths():
        slots, num = files.index_geometry(path)
        buf = bytearray(path.read_bytes())
        count = entry_bound(index.decode_header(buf)["indexCount"], num)
        at = index.HEADER_LEN + slots * index.SLOT_LEN
        entries = np.frombuffer(buf, dtype=index.ENTRY.dtype(), count=count, offset=at).copy()
        live = entries["phyOffset"][index.FIRST_INDEX :]
        entries["phyOffset"][index.FIRST_INDEX :] = [moved.get(int(o), int(o)) for o in live]
        buf[at : at + entries.nbytes] = entries.tobytes()
        for name in ("beginPhyOffset", "endPhyOffset"):
            pos = index.HEADER.offset(name)
            old = _POS.unpack_from(buf, pos)[0]
            _POS.pack_into(buf, pos, moved.get(old, old))
        (dst / path.name).write_bytes(bytes(buf))


def to_rocksdb(src: Path, dst: Path) -> int:
    """A copy of `src` whose consume queues are a RocksDB database (as `storeType=defaultRocksDB`
    keeps them: entries with their store times, and the offset table). Returns the entries written."""
    from rocksdict import Options, Rdict, WriteBatch

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("consumequeue"), copy_function=_sparse_copy)
    reader = StoreReader(src)
    times = {off: ts for off, ts in _store_times(src)}
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    families = {rocksqueue.OFFSET_FAMILY: Options(raw_mode=True)}
    db = Rdict(str(dst / "consumequeue"), options=opts, column_families=families)
    offsets = db.get_column_family(rocksqueue.OFFSET_FAMILY)
    written = 0
    for topic in reader.topics():
        for qid in reader.queue_ids(topic):
            prefix = rocksqueue.queue_prefix(topic, qid)
            first = last = None
            for qoffs, entries in reader.consume_queue(topic, qid):
                batch = WriteBatch(raw_mode=True)
                for qo, off, size, tags in zip(qoffs.tolist(), entries["commitLogOffset"].tolist(),
                                               entries["size"].tolist(), entries["tagsCode"].tolist(), strict=True):
                    batch.put(prefix + _POS.pack(qo), rocksqueue.VALUE.codec.pack(off, size, tags, times.get(off, 0)))
                    first = first or (qo, off)
                    last = (qo, off)
                written += len(entries)
                db.write(batch)
            for tag, row in ((rocksqueue.MAX_TAG, last), (rocksqueue.MIN_TAG, first)):
                if row is not None:
                    offsets[rocksqueue.bound_key(topic, qid, tag)] = rocksqueue.BOUND.codec.pack(row[1], row[0])
    db.close()
    (dst / "consumequeue" / "rocksdict-config.json").unlink(missing_ok=True)
    return written


def _store_times(store: Path):
    """(offset, storeTimestamp) of every record of the store's log."""
    for chunk in StoreReader(store).scan(verify_crc=False):
        b = chunk.batch
        if b is not None:
            yield from zip(b.offsets.tolist(), b.cols["storeTimestamp"].tolist(), strict=True)


def _sparse_copy(src: str, dst: str, block: int = 1 << 20) -> None:
    """Copy a file leaving its zero blocks as holes (a generated segment's unwritten tail stays sparse)."""
    with open(src, "rb") as f, open(dst, "wb") as out:
        while chunk := f.read(block):
            if chunk.count(0) == len(chunk):
                out.seek(len(chunk), 1)
            else:
                out.write(chunk)
        out.truncate()
