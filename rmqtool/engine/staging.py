"""A bulk load staged inside the store root and adopted into the store in one step.

The staging folder `.spark-load/<load id>@<attempt>/` mirrors the store (commitlog/, consumequeue/,
index/, checkpoint) and holds only the files the load writes: the store's last segment and
last queue files are copied in first when the load continues them. Nothing in the store
changes until adoption, which

1. checks every staged file against the manifest (size and CRC32C) and that the store still
   ends where the load was planned to start;
2. writes the journal `.spark-load/ADOPTING` naming the staging folder;
3. renames each staged file over its place in the store (same file system: one rename each);
4. records the load as adopted (`config/rmqtool-loads/<id>.json`, beside the topic table), removes
   the journal and the staging folder, and `.spark-load/` with them: a loaded store holds only
   what a broker's store holds.

A process killed before step 2 leaves the store as it was (the staging folder is discarded
by the next load); killed after it, the next writer finishes the renames from the journal
(`finish_pending`), so a store never stays half adopted. A load id already recorded is not
loaded again. Every attempt stages into its own folder and tasks never create folders, so a
Python worker of a killed attempt that is still finishing a task cannot write into the next
attempt's files.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from rmqtool.engine.commitlog import CommitLog
from rmqtool.engine.config import StoreConfig
from rmqtool.errors import RmqError
from rmqtool.files.filecrc import file_crc
from rmqtool.files.lock import fsync_path
from rmqtool.files.paths import StorePaths, offset_name
from rmqtool.structures import checkpoint, consumequeue
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.hosts import SocketAddress
from rmqtool.structures.config.topics import topics_path
from rmqtool.structures.consumequeue.queue import ConsumeQueue
from rmqtool.structures.index.service import IndexService

LOADS_DIR = ".spark-load"
RECORDS_DIR = "rmqtool-loads"  # in the store's config folder: one `<load id>.json` per adopted load
ADOPTING = "ADOPTING"
MANIFEST = "MANIFEST.json"
_LOAD_ID = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
_ATTEMPT_SEP = "@"  # staging folder: <load id>@<attempt>


@dataclass
class QueueEnd:
    next_offset: int  # queue offset the next entry gets
    last_file: Path | None  # the file holding it, when it exists


@dataclass
class IndexEnd:
    last_name: str | None
    end_phy: int
    end_ts: int
    count: int  # files


@dataclass
class StoreEnd:
    """Where a store ends: what a load continues."""

    commitlog_end: int
    queues: dict[tuple[str, int], QueueEnd] = field(default_factory=dict)
    index: IndexEnd | None = None
    checkpoint: checkpoint.Checkpoint = field(default_factory=checkpoint.Checkpoint)
    store_host: SocketAddress | None = None  # the broker address the newest record names

    def table(self) -> dict[tuple[str, int], int]:
        return {k: q.next_offset for k, q in self.queues.items()}

    def to_json(self) -> dict:
        return {"commitlogEnd": self.commitlog_end,
                "queues": {f"{t}/{q}": e.next_offset for (t, q), e in sorted(self.queues.items())}}


def read_end(paths: StorePaths, cfg: StoreConfig) -> StoreEnd:
    """The end of a cleanly closed store (or of no store yet), read without changing a byte."""
    if not paths.commitlog.is_dir():
        return StoreEnd(0)
    log = CommitLog(paths.commitlog, cfg)
    try:
        log.find_end()
        end = StoreEnd(log.max_offset, store_host=log.store_host)
    finally:
        log.close()
    if paths.consumequeue.is_dir():
        for topic_dir in sorted(paths.consumequeue.iterdir()):
            for qdir in sorted(topic_dir.iterdir()) if topic_dir.is_dir() else []:
                if not qdir.name.lstrip("-").isdigit():
                    continue
                cq = ConsumeQueue(qdir, topic_dir.name, int(qdir.name), cfg.mappedFileSizeConsumeQueue)
                try:
                    last = cq.files.last
                    end.queues[(topic_dir.name, int(qdir.name))] = QueueEnd(
                        cq.max_offset_in_queue, last.path if last is not None else None)
                finally:
                    cq.close()
    if cfg.messageIndexEnable and paths.index.is_dir():
        svc = IndexService(paths.index, cfg.maxHashSlotNum, cfg.maxIndexNum)
        try:
            if svc.files:
                hdr = svc.files[-1].header
                end.index = IndexEnd(svc.files[-1].name, int(hdr["endPhyOffset"]), int(hdr["endTimestamp"]),
                                     len(svc.files))
                del hdr  # a view of the map: the file cannot close while it lives
        finally:
            svc.close()
    if paths.checkpoint.exists():
        end.checkpoint = checkpoint.decode_checked(paths.checkpoint.read_bytes(), paths.checkpoint)
    return end


def check_load_id(load_id: str) -> str:
    if not _LOAD_ID.match(load_id):
        raise RmqError(f"load id {load_id!r}: use 1-100 letters, digits, '.', '_' or '-'")
    return load_id


def loads_dir(paths: StorePaths) -> Path:
    return paths.root / LOADS_DIR


def records_dir(paths: StorePaths) -> Path:
    return topics_path(paths.root).parent / RECORDS_DIR


def adopted(paths: StorePaths, load_id: str) -> dict | None:
    """The record of an adopted load (or of one loaded in process), or None."""
    for record in (records_dir(paths) / f"{load_id}.json", loads_dir(paths) / "loads" / f"{load_id}.json"):
        if record.exists():  # the second: where earlier versions kept it
            return json.loads(record.read_text())
    return None


def record_load(paths: StorePaths, load_id: str, record: dict) -> None:
    """Remember a load as done, atomically, so its id is not loaded again."""
    folder = records_dir(paths)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"{load_id}.json.tmp"
    tmp.write_text(json.dumps(record, indent=1))
    fsync_path(tmp)
    os.replace(tmp, folder / f"{load_id}.json")
    fsync_path(folder)


def tidy(paths: StorePaths) -> None:
    """Remove `.spark-load/` once nothing in it is needed (no adoption pending, no staging left);
    records kept there by older versions move to the config folder first."""
    root = loads_dir(paths)
    if not root.is_dir() or adopting(paths):
        return
    legacy = root / "loads"
    if legacy.is_dir():
        for old in legacy.glob("*.json"):
            if not (records_dir(paths) / old.name).exists():
                record_load(paths, old.stem, json.loads(old.read_text()))
            old.unlink()
        with contextlib.suppress(OSError):
            legacy.rmdir()
    with contextlib.suppress(OSError):
        root.rmdir()  # only when empty


def allocate(path: Path, size: int, copy_from: Path | None = None, used: int = 0) -> None:
    """A staged file of `size` bytes in an existing folder: zeros, or the first `used` bytes of `copy_from`."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        if copy_from is not None and used:
            src = os.open(copy_from, os.O_RDONLY)
            try:
                done = 0
                while done < used:
                    n = os.copy_file_range(src, fd, used - done, done, done)
                    if n == 0:
                        raise RmqError(f"{copy_from}: shorter than {used} bytes")
                    done += n
            finally:
                os.close(src)
        os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)


class Staging:
    """The staging folder of one load."""

    def __init__(self, paths: StorePaths, load_id: str, attempt: str | None = None) -> None:
        self.paths = paths
        self.load_id = check_load_id(load_id)
        self.attempt = attempt or secrets.token_hex(4)
        self.dir = loads_dir(paths) / f"{load_id}{_ATTEMPT_SEP}{self.attempt}"
        self.store = StorePaths(self.dir)

    @classmethod
    def named(cls, paths: StorePaths, folder: str) -> Staging:
        """The staging of a folder name as the journal records it."""
        load_id, sep, attempt = folder.rpartition(_ATTEMPT_SEP)
        if not sep or not attempt:
            raise RmqError(f"{loads_dir(paths) / ADOPTING}: names {folder!r}, not a staging folder")
        return cls(paths, load_id, attempt)

    def create(self) -> None:
        """Make the empty folder tree the tasks write into."""
        for sub in ("work", "commitlog", "consumequeue", "index"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)

    def work(self, name: str) -> Path:
        """A scratch file of the load (chunks, plans, keys); never adopted."""
        return self.dir / "work" / name

    def prepare_commitlog(self, end: StoreEnd, segments: list[int], segment_size: int, blanks) -> None:
        """Allocate the segments the load writes, the store's last one copied when continued;
        write the blank markers that close segments."""
        for start in segments:
            staged = self.store.commitlog / offset_name(start)
            existing = self.paths.commitlog / offset_name(start)
            staged.parent.mkdir(parents=True, exist_ok=True)
            used = min(max(end.commitlog_end - start, 0), segment_size)
            allocate(staged, segment_size, existing if existing.exists() else None, used)
        for at in list(blanks):
            start = int(at) - int(at) % segment_size
            with open(self.store.commitlog / offset_name(start), "r+b") as f:
                f.seek(int(at) - start)
                f.write(message.encode_blank(segment_size - (int(at) - start)))

    def prepare_queues(self, end: StoreEnd, first: dict[tuple[str, int], int], table: dict[tuple[str, int], int],
                       file_size: int) -> None:
        """Allocate each touched queue's files from its first new entry to its last."""

        for key, first_offset in first.items():
            last_offset = table[key]
            if last_offset == first_offset:
                continue
            start = consumequeue.file_start_of(first_offset, file_size)
            for file_start in range(start, consumequeue.byte_of(last_offset), file_size):
                existing = self.paths.queue_dir(*key) / offset_name(file_start)
                used = consumequeue.byte_of(first_offset) - file_start if existing.exists() else 0
                self.store.queue_dir(*key).mkdir(parents=True, exist_ok=True)
                allocate(self.store.queue_dir(*key) / offset_name(file_start), file_size,
                         existing if used > 0 else None, max(used, 0))

    def prepare_index(self, names: list[str], size: int) -> None:
        """Allocate the index files the load fills."""
        for name in names:
            allocate(self.store.index / name, size)

    def write_checkpoint(self, cp: checkpoint.Checkpoint) -> None:
        self.store.checkpoint.write_bytes(checkpoint.encode(cp))

    def data_files(self) -> list[Path]:
        """Every staged file that goes into the store, relative to the folder."""
        out = []
        for sub in ("commitlog", "consumequeue", "index"):
            out += sorted(p.relative_to(self.dir) for p in (self.dir / sub).rglob("*") if p.is_file())
        if self.store.checkpoint.exists():
            out.append(self.store.checkpoint.relative_to(self.dir))
        return out

    def write_manifest(self, doc: dict) -> None:
        """List every staged file with its size and CRC32C, atomically."""
        files = []
        for rel in self.data_files():
            size, crc = file_crc(self.dir / rel)
            files.append({"path": str(rel), "size": size, "crc32c": crc})
        body = json.dumps({**doc, "loadId": self.load_id, "files": files}, indent=1)
        tmp = self.dir / (MANIFEST + ".tmp")
        tmp.write_text(body)
        fsync_path(tmp)
        os.replace(tmp, self.dir / MANIFEST)

    def manifest(self) -> dict:
        path = self.dir / MANIFEST
        if not path.exists():
            raise RmqError(f"{self.dir}: no manifest (the load did not finish staging)")
        return json.loads(path.read_text())


def adopt(paths: StorePaths, staging: Staging, cfg: StoreConfig) -> dict:
    """Check the staged files and move them into the store (see the module's steps)."""
    doc = staging.manifest()
    for f in doc["files"]:
        size, crc = file_crc(staging.dir / f["path"])
        if (size, crc) != (f["size"], f["crc32c"]):
            raise RmqError(f"staged {f['path']}: size {size} crc32c {crc:#010x}, the manifest says "
                           f"{f['size']} {f['crc32c']:#010x}: the staging folder is damaged, load again")
    now = read_end(paths, cfg)
    if now.commitlog_end != doc["base"]["commitlogEnd"] or now.to_json()["queues"] != doc["base"]["queues"]:
        raise RmqError("the store changed since this load was planned: load again")
    journal = loads_dir(paths) / ADOPTING
    journal.write_text(staging.dir.name)
    fsync_path(journal)
    fsync_path(journal.parent)
    return _move_all(paths, staging, doc)


def _move_all(paths: StorePaths, staging: Staging, doc: dict) -> dict:
    touched: set[Path] = set()
    for f in doc["files"]:
        src, dst = staging.dir / f["path"], paths.root / f["path"]
        if not src.exists():  # moved before an interruption
            continue
        fsync_path(src)
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dst)
        touched.add(dst.parent)
    for d in touched:
        fsync_path(d)
    record = {k: v for k, v in doc.items() if k != "files"} | {"files": len(doc["files"])}
    record_load(paths, staging.load_id, record)
    (loads_dir(paths) / ADOPTING).unlink()
    fsync_path(loads_dir(paths))
    shutil.rmtree(staging.dir, ignore_errors=True)
    tidy(paths)
    return record


def adopting(paths: StorePaths) -> bool:
    """Whether an adoption was started and not finished."""
    return (loads_dir(paths) / ADOPTING).exists()


def finish_pending(paths: StorePaths) -> str | None:
    """Finish an adoption a killed process left half done; returns its load id."""
    journal = loads_dir(paths) / ADOPTING
    if not journal.exists():
        return None
    staging = Staging.named(paths, journal.read_text().strip())
    _move_all(paths, staging, staging.manifest())
    return staging.load_id


def discard_stale(paths: StorePaths, keep: str | None = None) -> list[str]:
    """Remove staging folders of loads that never reached adoption; returns their ids."""
    root = loads_dir(paths)
    if not root.is_dir():
        return []
    gone = []
    for d in root.iterdir():
        if d.is_dir() and d.name not in ("loads", keep):
            shutil.rmtree(d, ignore_errors=True)
            gone.append(d.name)
    return gone
