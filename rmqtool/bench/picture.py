"""The picture's cost against `info`'s, in process: `store_info` and `store_picture` (without verify) on the
same store, each run `runs` times taking turns, the best of each kept; the ratio is the picture's over info's.
The report page is held to 1.5x the time of `info`."""

from __future__ import annotations

import os
import time

from rmqtool.bench.scan import peak_rss_bytes, reset_peak_rss
from rmqtool.ops.info import store_info
from rmqtool.ops.picture import store_picture


def picture_cost(store: str | os.PathLike, config: str | os.PathLike | None = None, *, runs: int = 3) -> dict:
    """{"infoS", "pictureS", "ratio", "peakRssBytes", "runs"}: the best seconds of each, their ratio, and
    the process's peak resident memory after them."""
    store_picture(store, config)  # compiled kernels and the page cache warm for both
    reset_peak_rss()
    best = {"info": float("inf"), "picture": float("inf")}
    for _ in range(max(runs, 1)):
        for name, call in (("info", store_info), ("picture", store_picture)):
            began = time.perf_counter()
            call(store, config)
            best[name] = min(best[name], time.perf_counter() - began)
    return {"infoS": round(best["info"], 4), "pictureS": round(best["picture"], 4),
            "ratio": round(best["picture"] / best["info"], 3) if best["info"] else None,
            "peakRssBytes": peak_rss_bytes(), "runs": max(runs, 1)}
