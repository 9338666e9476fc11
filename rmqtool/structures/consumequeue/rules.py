"""The consume-queue file rules, once: verify reports them and recovery refuses on their errors.

Layout: `consumequeue/<topic>/<queueId>/<20-digit start byte>`. At start the broker loads every
file of every queue folder (MappedFileQueue.load): a file whose size is not the store's
mappedFileSizeConsumeQueue stops it, and so does a name that is not a number; a start that is
not a multiple of the file size puts the file's entries at the wrong queue offsets. What is not a
topic folder, or not a numeric queue id folder inside one, the broker skips (a warning here).
A queue's entries end at its first file that is not full (`FileQueues.read`): files after it
are past the end, which the broker's recovery deletes but a read by queue offset still serves.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from rmqtool.files.paths import is_temporary, parse_offset_name
from rmqtool.files.segments import SegmentFile
from rmqtool.report import CONSUMEQUEUE, ERROR, WARNING, Finding
from rmqtool.structures.consumequeue import ENTRY_LEN, byte_of

# The kinds of these rules' findings (a closed list).
FILE_SIZE = "queue-file-size"  # a queue file not of the store's queue file size
FILE_NAME = "queue-file-name"  # a file in a queue folder not named by a 20-digit start offset
FILE_START = "queue-file-start"  # a start offset that is not a multiple of the file size
FILE_PAST_END = "queue-file-past-end"  # a file after the queue's first file that is not full
FOLDER_NAME = "queue-folder-name"  # an entry of consumequeue/ or of a topic folder that is no queue
KINDS = (FILE_SIZE, FILE_NAME, FILE_START, FILE_PAST_END, FOLDER_NAME)
GEOMETRY_KINDS = (FILE_SIZE, FILE_START)  # what a wrong mappedFileSizeConsumeQueue makes too
REFUSED_AT_START = (FILE_SIZE, FILE_NAME, FILE_START)  # the broker's load of the queue files stops on these


def _finding(path: str | os.PathLike, offset: int, reason: str, nbytes: int, kind: str,
             severity: str = ERROR) -> Finding:
    assert kind in KINDS, kind
    return Finding(str(path), offset, reason, nbytes, severity, CONSUMEQUEUE, kind)


def entry_finding(location: str | os.PathLike, queue_offset: int, reason: str, kind: str) -> Finding:
    """An error about the entry at `queue_offset` of the queue at `location` (its folder): at the entry's
    byte in the queue, covering its 20 bytes."""
    return Finding(str(location), byte_of(queue_offset), reason, ENTRY_LEN, structure=CONSUMEQUEUE, kind=kind)


def is_queue_id(name: str) -> bool:
    """Whether a folder name is a queue id as the broker names it (`String.valueOf(queueId)`)."""
    return name.isdigit() and str(int(name)) == name


def folder_findings(root: Path) -> list[Finding]:
    """Entries of `root` (the consumequeue folder) that are not topic folders, and entries of topic
    folders that are not numeric queue id folders: warnings, the broker skips them."""
    out: list[Finding] = []
    for topic in sorted(os.scandir(root), key=lambda e: e.name) if root.is_dir() else ():
        if not topic.is_dir():
            out.append(_finding(topic.path, 0, "not a topic folder: the broker skips it", 0, FOLDER_NAME, WARNING))
            continue
        for queue in sorted(os.scandir(topic.path), key=lambda e: e.name):
            if not (queue.is_dir() and is_queue_id(queue.name)):
                out.append(_finding(queue.path, 0, "not a queue folder (named by a queue id): the broker skips it",
                                    0, FOLDER_NAME, WARNING))
    return out


def file_findings(directory: Path, file_size: int) -> list[Finding]:
    """Each file of one queue folder whose name or size the broker cannot load (errors), in name order.

    Temporary files of an unfinished creation are left to recovery, which removes them."""
    out: list[Finding] = []
    files = sorted((e for e in os.scandir(directory) if e.is_file() and not is_temporary(e.name)),
                   key=lambda e: e.name) if directory.is_dir() else []
    for entry in files:
        start, size = parse_offset_name(entry.name), entry.stat().st_size
        if start is None:
            out.append(_finding(entry.path, 0, "not named by its 20-digit start offset: the broker cannot load it",
                                size, FILE_NAME))
        elif start % file_size:
            out.append(_finding(entry.path, start, f"starts at {start}, not at a multiple of "
                                f"mappedFileSizeConsumeQueue={file_size}: its entries would be read at the wrong "
                                "queue offsets", size, FILE_START))
        if size != file_size:
            out.append(_finding(entry.path, start or 0, f"{size} bytes, not mappedFileSizeConsumeQueue={file_size}: "
                                "the broker refuses to start", abs(size - file_size), FILE_SIZE))
    return out


def past_end_findings(last: SegmentFile | None, past: Sequence[SegmentFile]) -> list[Finding]:
    """One error per file of `past`, the files of a queue after `last`, its first file that is not full
    (None: every file is full, and nothing is past the end)."""
    if last is None:
        return []
    return [_finding(seg.path, seg.start, f"after {last.path.name}, which is not full, where the queue's entries "
                     "end: the broker's recovery deletes this file, but a read by queue offset serves its entries",
                     seg.size, FILE_PAST_END) for seg in past]


def store_findings(reader) -> list[Finding]:
    """Every queue-file rule over a reader's consume queues (the registry's hook)."""
    return reader.queues.findings()
