"""The index's `info` section: its files, their size, the entries they hold, and the times and offsets they
cover, from each file's header alone. A file holding no entry that begins past the log's end (a write
killed after it rolled to a new file, `logcheck.interrupted_past`) is listed apart: its header's times
and offsets are not the store's.

`view` is the store being read: `index_paths()` and `index_files()`; `log_end` where its log ends (None:
no record read).
"""

from __future__ import annotations

from collections import Counter

from rmqtool.structures.index.logcheck import interrupted_past
from rmqtool.structures.view import StoreView


def section(view: StoreView, log_end: int | None) -> dict:
    files = view.index_paths()
    out: dict = {"files": len(files)}
    if not files:
        return out
    reader = view.index_files()
    heads = []  # (name, header, entries held): each file's view let go once read (a store may hold thousands)
    for p in files:
        v = reader.index_file(p)
        heads.append((p.name, v.header, v.held))
    out["fileSize"] = Counter(p.stat().st_size for p in files).most_common(1)[0][0]
    out["entries"] = sum(held for _, _, held in heads)
    past = {name for name, h, held in heads if log_end is not None and interrupted_past(h["beginPhyOffset"], held,
                                                                                         log_end)}
    if past:
        out["pastLogEnd"] = sorted(past)
    kept = [h for name, h, _ in heads if name not in past]
    if kept:
        out["firstBeginTimestamp"] = kept[0]["beginTimestamp"]
        out["lastEndTimestamp"] = kept[-1]["endTimestamp"]
        out["lastEndPhyOffset"] = kept[-1]["endPhyOffset"]
    return out
