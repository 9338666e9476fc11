"""What mends the commitlog's findings, and what cannot be mended in place.

A damaged record (a CRC or length that does not add up, a field no broker writes (`impossible`), garbage,
zeros between records, a stray end marker) is mended by cutting the log at the first one and appending the
intact records after it again, at new offsets: the broker's recovery would cut there too, and keep nothing
after (a record only `impossible` names it keeps, and the queues it makes of it). A segment missing
between two others, segments that overlap or a segment of another size cannot be mended in place: the
broker will not start on them (or serves a hole), and no cut gives back what is not there. Records that
consume queues point at past the log's end were lost with their segment (zeroed, cut or torn): the
broker's recovery cuts the queues at the end, and the segment that lost them is named.
"""

from __future__ import annotations

from pathlib import Path

from rmqtool.report import COMMITLOG, CONSUMEQUEUE, ERROR, Finding
from rmqtool.structures.commitlog.geometry import MISSING, OVERLAPPING, SIZE
from rmqtool.structures.structure import CANNOT_MEND, CUT_AND_REPACK, RECOVER, Repair

UNMENDABLE = (MISSING, OVERLAPPING, SIZE)
PAST_LOG_END = "entry-past-log-end"  # a consume-queue entry pointing past the log's last record


def repairs(findings: list[Finding], segments: list[Path], segment_size: int, data_end: int) -> list[Repair]:
    """The commitlog's repairs for `findings` (every structure's: queue entries past the end name the
    segment that lost its records). `segments` are the log's files, `data_end` where its good records end."""
    own = [f for f in findings if f.structure == COMMITLOG and f.severity == ERROR]
    out = [Repair(COMMITLOG, CANNOT_MEND, f.file, f.reason, (f.kind,)) for f in own if f.kind in UNMENDABLE]
    damaged = sorted((f for f in own if f.kind not in UNMENDABLE), key=lambda f: f.offset)
    if damaged:
        first = damaged[0]
        kinds = tuple(sorted({f.kind for f in damaged}))
        out.append(Repair(COMMITLOG, CUT_AND_REPACK, first.file,
                          f"the log is damaged at {first.offset} ({first.reason}): cut it there and append the "
                          "intact records after it again", kinds, first.offset))
    past = [f for f in findings if f.structure == CONSUMEQUEUE and f.kind == PAST_LOG_END]
    if past and not damaged:
        lost = lost_segments(segments, segment_size, data_end)
        named = ", ".join(p.name for p in lost)
        out.append(Repair(COMMITLOG, RECOVER, str(lost[0]) if lost else "commitlog",
                          f"consume queues point past the log's end ({data_end}): the records of segment "
                          f"{named} there were lost (zeroed, cut or torn); the broker's recovery cuts the queues "
                          "at the end", (PAST_LOG_END,)))
    return out


def lost_segments(segments: list[Path], segment_size: int, data_end: int) -> list[Path]:
    """The segments past the log's good records (none of their records survives), or else the one the
    good records end in (its tail was lost)."""
    after = [p for p in segments if int(p.name) >= data_end]
    if after:
        return after
    inside = [p for p in segments if int(p.name) <= data_end < int(p.name) + segment_size]
    return inside
