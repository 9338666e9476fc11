"""`info`'s disk use: the bytes each structure's files take, and each topic's share of the commitlog.

Every file under the store root (and under the commitlog's folder when the broker keeps it elsewhere) is
asked of the registry's structures (`Structure.owns`; the consume queues first, as a topic may be named
like another structure's folder), then of the store's own files (`store.files`: lock, abort, journals);
a file none owns is counted under its first folder's name (`lost`, ...). Two sizes per file, as `du` and
`ls` differ for the broker's preallocated, mapped files: allocated (`st_blocks * 512`, what `du` counts)
and apparent (`st_size`, what `ls -l` counts). A file with several links is counted once. Cost: one
`lstat` per file; nothing is read.

A topic's share of the commitlog is the sum of its queue entries' sizes (a record's storeSize, which the
broker writes into each entry) over the entries whose records the log holds (`ops.timeline`, the same pass
as the timeline): no log scan. What it does not cover is `unattributedBytes`: the log's data no queue entry
points at (records without a queue entry: transaction prepared and rollback records; records whose entries
lie below their queue's min offset; records of a queue since deleted), and the blank markers that end the
segments.
"""

from __future__ import annotations

import os
from pathlib import Path

from rmqtool.engine.reader import StoreReader
from rmqtool.ops.timeline import log_gaps
from rmqtool.structures.registry import COMMITLOG, CONSUME_QUEUES, REGISTRY

STORE_FILES = "store files"  # lock, abort, journals: `store.files`, beside the structures
OWNERS = (CONSUME_QUEUES, *(s for s in REGISTRY if s is not CONSUME_QUEUES))


def _tree(folder: str):
    """(path, lstat) of every regular file under `folder`, links not followed; one `scandir` per folder."""
    try:
        entries = list(os.scandir(folder))
    except OSError:  # gone, or not a folder
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                yield from _tree(entry.path)
            elif entry.is_file(follow_symlinks=False):
                yield entry.path, entry.stat(follow_symlinks=False)
        except OSError:  # gone while walked
            continue


def disk_use(reader: StoreReader, doc: dict, queue_rows: list[dict]) -> dict:
    """The `disk` section of `info --json` (see docs/json-schema.md); `doc` is the document so far (its
    commitlog section), `queue_rows` each queue's records and their bytes (`ops.timeline.store_timeline`).
    A folder at the top of the root that a structure keeps whole (`Structure.keeps_folder`: the consume queues'
    thousands of files) is summed without asking file by file."""
    root = reader.paths.root
    rows: dict[str, dict] = {}
    seen: set[tuple[int, int]] = set()

    def count(path: str, st: os.stat_result, name: str, owner: str) -> None:
        if st.st_nlink > 1:
            if (st.st_dev, st.st_ino) in seen:
                return
            seen.add((st.st_dev, st.st_ino))
        row = rows.setdefault(name, {"name": name, "owner": owner, "files": 0, "allocatedBytes": 0,
                                     "apparentBytes": 0})
        row["files"] += 1
        row["allocatedBytes"] += st.st_blocks * 512
        row["apparentBytes"] += st.st_size

    try:
        top = list(os.scandir(root))
    except OSError:
        top = []
    for entry in top:
        folder = Path(entry.path)
        keeper = next((s for s in OWNERS if s.keeps_folder(folder, root)), None) \
            if entry.is_dir(follow_symlinks=False) else None
        if keeper is not None:
            for path, st in _tree(entry.path):
                count(path, st, keeper.name, "structure")
            continue
        files = _tree(entry.path) if entry.is_dir(follow_symlinks=False) else \
            [(entry.path, entry.stat(follow_symlinks=False))] if entry.is_file(follow_symlinks=False) else []
        for path, st in files:
            count(path, st, *_owner(reader, Path(path), root))
    if not reader.paths.commitlog.is_relative_to(root):  # the broker keeps the log elsewhere (storePathCommitLog)
        for path, st in _tree(str(reader.paths.commitlog)):
            count(path, st, COMMITLOG.name, "structure")
    order = [s.name for s in REGISTRY]
    parts = sorted(rows.values(), key=lambda r: (r["owner"] != "structure", r["owner"] != "store",
                                                 order.index(r["name"]) if r["name"] in order else 0, r["name"]))
    return {"allocatedBytes": sum(r["allocatedBytes"] for r in parts),
            "apparentBytes": sum(r["apparentBytes"] for r in parts), "files": sum(r["files"] for r in parts),
            "parts": parts, "commitlogTopics": _topics(reader, doc["commitlog"], queue_rows)}


def _owner(reader: StoreReader, path: Path, root: Path) -> tuple[str, str]:
    """(the name it is counted under, "structure" | "store" | "other")."""
    for structure in OWNERS:
        if structure.owns(path, root):
            return structure.name, "structure"
    if reader.store.files.owns(path):
        return STORE_FILES, "store"
    return path.relative_to(root).parts[0], "other"


def _topics(reader: StoreReader, log: dict, queue_rows: list[dict]) -> dict:
    """Each topic's share of the log's records (the sizes of its entries whose records the log holds), largest
    first, against the log's data between its first record and its end less what no segment holds."""
    per: dict[str, dict] = {}
    for q in queue_rows:
        t = per.setdefault(q["topic"], {"topic": q["topic"], "messages": 0, "bytes": 0})
        t["messages"] += q["records"]
        t["bytes"] += q["recordBytes"]
    start, end = log.get("firstOffset", 0), log.get("endOffset", 0)
    data = max(end - start, 0) - sum(high - low for low, high in log_gaps(reader, start, end) if high is not None)
    topics = sorted((t for t in per.values() if t["messages"]), key=lambda t: (-t["bytes"], t["topic"]))
    attributed = sum(t["bytes"] for t in topics)
    return {"logDataBytes": data, "attributedBytes": attributed, "unattributedBytes": data - attributed,
            "topics": topics}
