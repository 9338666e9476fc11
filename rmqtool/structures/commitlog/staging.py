"""The log of a staged store image (a repair builds the whole store beside the live one, then swaps it in).

Segments wholly before the cut are hard-linked (never written, never copied); the one holding the cut is copied
up to it, the rest of it zeros (sparse); none after. What the image replaces in the live log is then every live
segment from the holding one on, each by its staged namesake or by nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from rmqtool.files.segments import SegmentFile


def stage_segments(segments: Sequence[SegmentFile], segment_size: int, log_dir: Path, cut: int | None) -> None:
    """The image's segments in `log_dir` for a log cut at `cut` (None: every segment, linked)."""
    for seg in segments:
        target = log_dir / seg.path.name
        if cut is None or seg.start + segment_size <= cut:
            os.link(seg.path, target)
        elif seg.start < cut:
            with open(seg.path, "rb") as src, open(target, "wb") as out:
                os.sendfile(out.fileno(), src.fileno(), 0, cut - seg.start)
                out.truncate(segment_size)
                out.flush()
                os.fsync(out.fileno())


def replaced_segments(segments: Sequence[SegmentFile], segment_size: int, log_dir: Path, cut: int) \
        -> list[tuple[str, Path | None]]:
    """(name, its staged replacement or None: it goes) for each live segment name from the one holding `cut`
    on, and each staged segment past it a repack appended, in name order."""
    holding = next((s.start for s in segments if s.start + segment_size > cut), None)
    if holding is None:
        return []
    names = {s.path.name for s in segments if s.start >= holding}
    names |= {p.name for p in log_dir.iterdir() if p.name.isdigit() and int(p.name) >= holding}
    return [(name, log_dir / name if (log_dir / name).exists() else None) for name in sorted(names)]
