"""An index file's size against its geometry, and its header against its entries, as Findings.

The broker sets the header as it puts keys (IndexFile.putKey): the first entry sets beginTimestamp
and beginPhyOffset, every entry sets endTimestamp and endPhyOffset, indexCount is one past the
newest entry, and an entry's timeDiff is (storeTimestamp - beginTimestamp) / 1000, truncated, kept
within 0 .. Integer.MAX_VALUE (0 while beginTimestamp <= 0). So the newest entry's timeDiff follows
from the header's two times; only entry 1's is timed against the previous file's end.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rmqtool.report import ERROR, INDEX, Finding
from rmqtool.structures.index import (
    BEGIN_PHY_AT,
    BEGIN_TIMESTAMP_AT,
    ENTRY_LEN,
    INDEX_COUNT_AT,
    entry_position,
    file_len,
)

if TYPE_CHECKING:
    import numpy as np

FILE_SIZE = "index-file-size"
COUNT_PAST_ENTRIES = "index-count-past-entries"
TIME_RANGE = "index-time-range"
PHY_RANGE = "index-phy-range"
KINDS = (FILE_SIZE, COUNT_PAST_ENTRIES, TIME_RANGE, PHY_RANGE)  # every kind this module reports

_MS_PER_S = 1000
_INT_MAX = 2**31 - 1
_EMPTY_SCAN = 1 << 16  # entries looked at a time, from the end, for the last one written


def fits(size: int, hash_slots: int, index_num: int) -> bool:
    return size == file_len(hash_slots, index_num)


def file_size(path: str, size: int, hash_slots: int, index_num: int) -> Finding:
    """A file whose size is not the geometry's: none of its entries can be read."""
    want = file_len(hash_slots, index_num)
    return _finding(path, 0, f"index file is {size} bytes, not the {want} bytes maxHashSlotNum={hash_slots}, "
                    f"maxIndexNum={index_num} make (cut short or grown): its entries are not read", size, FILE_SIZE)


def held(entries: np.ndarray) -> int:
    """How many of `entries` (entries 1 .. indexCount-1) the file holds: up to the last non-empty one."""
    import numpy as np

    hi, step = len(entries), 1
    while hi > 0:
        lo = max(hi - step, 0)
        part = entries[lo:hi]
        used = np.flatnonzero((part["keyHash"] != 0) | (part["phyOffset"] != 0) | (part["timeDiff"] != 0)
                              | (part["prevIndex"] != 0))
        if used.size:
            return lo + int(used[-1]) + 1
        hi, step = lo, min(step * 64, _EMPTY_SCAN)
    return 0


def header_findings(path: str, header: Mapping[str, int], entries: np.ndarray, index_num: int,
                    log_limit: int | None = None) -> tuple[list[Finding], int]:
    """What `header` says that the file's `entries` (1 .. indexCount-1, at most the file's) contradict,
    and how many of them it holds. Given `log_limit` (where the log's last segment ends), a first or last
    entry pointing past it while the header's offset does not is the entry's damage (the log check reports
    it), not the header's."""
    count, n = int(header["indexCount"]), held(entries)
    found = []
    if count > index_num or n < len(entries):
        why = f"maxIndexNum={index_num} allows {index_num - 1}" if count > index_num else \
            f"entries {n + 1}..{count - 1} are empty"
        found.append(_finding(path, INDEX_COUNT_AT, f"indexCount {count} says {count - 1} entries, but the file holds "
                              f"{n} ({why})", 4, COUNT_PAST_ENTRIES))
    if n == 0:
        return found, n
    first, last = entries[0], entries[n - 1]
    begin, end = int(header["beginTimestamp"]), int(header["endTimestamp"])
    if begin <= 0 or end < begin:
        why = f"is after endTimestamp {end}" if begin > 0 else f"is not a time, but the file holds {n} entries"
        found.append(_finding(path, BEGIN_TIMESTAMP_AT, f"beginTimestamp {begin} {why} (its first key's store time "
                              "begins it, its last key's ends it)", 16, TIME_RANGE))
    elif n == 1 and begin != end:
        found.append(_finding(path, BEGIN_TIMESTAMP_AT, f"beginTimestamp {begin} and endTimestamp {end} differ, but "
                              "the file holds one entry (both are its store time)", 16, TIME_RANGE))
    elif n > 1 and int(last["timeDiff"]) != time_diff(end, begin):
        found.append(_finding(path, BEGIN_TIMESTAMP_AT, f"beginTimestamp {begin} to endTimestamp {end} is "
                              f"{time_diff(end, begin)} s, but the last entry ({n}) is {int(last['timeDiff'])} s "
                              "after the begin", 16, TIME_RANGE))
    low, high = int(header["beginPhyOffset"]), int(header["endPhyOffset"])
    ends = [int(first["phyOffset"]), int(last["phyOffset"])]
    if log_limit is not None:
        ends = [said if phy >= log_limit > said else phy for phy, said in zip(ends, (low, high), strict=True)]
    if (low, high) != tuple(ends):
        found.append(_finding(path, BEGIN_PHY_AT, f"beginPhyOffset {low} to endPhyOffset {high}, but the entries run "
                              f"from {int(first['phyOffset'])} (entry 1) to {int(last['phyOffset'])} (entry {n})",
                              16, PHY_RANGE))
    return found, n


def time_diff(store_timestamp: int, begin_timestamp: int) -> int:
    """The timeDiff the broker writes for a key stored at `store_timestamp` in a file begun at `begin_timestamp`."""
    if begin_timestamp <= 0:
        return 0
    span = store_timestamp - begin_timestamp
    seconds = abs(span) // _MS_PER_S * (1 if span >= 0 else -1)  # Java's division truncates
    return min(max(seconds, 0), _INT_MAX)


def entry_finding(path: str, hash_slots: int, n: int, reason: str, kind: str, severity: str = ERROR) -> Finding:
    """A finding about entry `n` of a file of `hash_slots` slots: it covers that entry's bytes."""
    return Finding(path, entry_position(hash_slots, n), reason, ENTRY_LEN, severity, INDEX, kind)


def _finding(path: str, offset: int, reason: str, nbytes: int, kind: str) -> Finding:
    return Finding(path, offset, reason, nbytes, ERROR, INDEX, kind)
