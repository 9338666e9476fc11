"""What mends the commitlog's findings, and what cannot be mended in place.

A damaged record (a CRC or length that does not add up, a field no broker writes (`impossible`), garbage,
zeros between records, a stray end marker) is mended by cutting the log at the first one and appending the
intact records after it again, at new offsets: the broker's recovery would cut there too, and keep nothing
after (a record only `impossible` names it keeps, and the queues it makes of it). A segment missing
between two others, segments that overlap or a segment of another size cannot be mended in place: the
broker will not start on them (or serves a hole), and no cut gives back what is not there. Records that
consume queues point at past the log's end were lost with their segment (zeroed, cut or torn): the
broker's recovery cuts the queues at the end, and the segment that lost them is named.

Records lost from the middle of the log (a missing segment `recover --thorough` filled with an end marker)
leave the records after them with queue offsets that skip theirs (the consume queues' `queue-offset-gap`).
A queue numbers its entries by position, as the broker's ConsumeQueue appends them, so no rebuild matches
those records again; appending them again numbers them on: a cut where they start (the segment after the
hole) and a repack, which puts them back at the offsets they had.
"""

from __future__ import annotations

from pathlib import Path

from rmqtool.report import COMMITLOG, CONSUMEQUEUE, ERROR, Finding
from rmqtool.structures.commitlog.geometry import MISSING, OVERLAPPING, SIZE
from rmqtool.structures.structure import CANNOT_MEND, CUT_AND_REPACK, RECOVER, Repair

UNMENDABLE = (MISSING, OVERLAPPING, SIZE)
PAST_LOG_END = "entry-past-log-end"  # a consume-queue entry pointing past the log's last record
QUEUE_OFFSET_GAP = "queue-offset-gap"  # a consume queue's records skip queue offsets (their records were lost)
NUMBERED_BY_POSITION = ("entry-mismatch", "record-without-entry")  # what a queue shows from a gap on


def repairs(findings: list[Finding], segments: list[Path], segment_size: int, data_end: int) -> list[Repair]:
    """The commitlog's repairs for `findings` (every structure's: queue entries past the end name the
    segment that lost its records, gaps in queue offsets the hole that lost them). `segments` are the log's
    files, `data_end` where its good records end."""
    own = [f for f in findings if f.structure == COMMITLOG and f.severity == ERROR]
    out = [Repair(COMMITLOG, CANNOT_MEND, f.file, f.reason, (f.kind,)) for f in own if f.kind in UNMENDABLE]
    damaged = sorted((f for f in own if f.kind not in UNMENDABLE), key=lambda f: f.offset)
    cuts: list[Repair] = []
    if damaged:
        first = damaged[0]
        cuts.append(Repair(COMMITLOG, CUT_AND_REPACK, first.file,
                           f"the log is damaged at {first.offset} ({first.reason}): cut it there and append the "
                           "intact records after it again", tuple(sorted({f.kind for f in damaged})), first.offset))
    gaps = [f for f in findings if f.structure == CONSUMEQUEUE and f.kind == QUEUE_OFFSET_GAP]
    if gaps:
        hole, after = _after_hole(segments)
        if hole is not None and after is not None:
            cuts.append(Repair(COMMITLOG, CUT_AND_REPACK, str(after),
                               f"segment {hole.name} holds no record (a missing segment filled with an end marker): "
                               "the records after it skip the queue offsets of those lost with it, which no rebuild "
                               f"of the queues renumbers: cut the log where they start ({after.name}) and append them "
                               "again, their queue offsets numbered on", (), int(after.name)))
        elif not cuts and not out:
            out.append(Repair(COMMITLOG, CANNOT_MEND, gaps[0].file,
                              f"{gaps[0].reason}; no hole or damaged record in the log before it says where they "
                              "were lost: cut the log at that record (`rmqtool export --from-offset`, `rmqtool "
                              "recover --truncate-to`) and append the records after it again (`rmqtool import "
                              "--repack`)", renumbered_kinds(findings)))
    if cuts:
        low = min(cuts, key=lambda r: r.at if r.at is not None else -1)
        kinds = {k for r in cuts for k in r.kinds} | set(renumbered_kinds(findings) if gaps else ())
        out.append(Repair(low.structure, low.action, low.target, low.reason, tuple(sorted(kinds)), low.at))
    past = [f for f in findings if f.structure == CONSUMEQUEUE and f.kind == PAST_LOG_END]
    if past and not cuts:
        lost = lost_segments(segments, segment_size, data_end)
        named = ", ".join(p.name for p in lost)
        out.append(Repair(COMMITLOG, RECOVER, str(lost[0]) if lost else "commitlog",
                          f"consume queues point past the log's end ({data_end}): the records of segment "
                          f"{named} there were lost (zeroed, cut or torn); the broker's recovery cuts the queues "
                          "at the end", (PAST_LOG_END,)))
    return out


def renumbered(findings: list[Finding]) -> list[Finding]:
    """The consume-queue findings that only appending the log's records again mends: each queue's gaps in the
    queue offsets of its records, and its entries and records from its first gap on that do not match."""
    first_gap: dict[str, int] = {}
    for f in findings:
        if f.structure == CONSUMEQUEUE and f.kind == QUEUE_OFFSET_GAP:
            first_gap[f.file] = min(first_gap.get(f.file, f.offset), f.offset)
    return [f for f in findings if f.structure == CONSUMEQUEUE and f.file in first_gap and
            (f.kind == QUEUE_OFFSET_GAP or (f.kind in NUMBERED_BY_POSITION and f.offset >= first_gap[f.file]))]


def renumbered_kinds(findings: list[Finding]) -> tuple[str, ...]:
    """The kinds a repack of the records after a gap mends whole: those of `renumbered` findings that no other
    consume-queue finding has (a kind some other finding has too is left to the rebuild of the queues)."""
    mended = renumbered(findings)
    taken = {id(f) for f in mended}
    others = {f.kind for f in findings if f.structure == CONSUMEQUEUE and id(f) not in taken}
    return tuple(sorted({f.kind for f in mended} - others))


def _after_hole(segments: list[Path]) -> tuple[Path | None, Path | None]:
    """The first segment that holds no record (a hole `recover --thorough` filled), and the first segment after
    it and any filled ones next to it: where the records after the hole start. The cut goes there, not at the
    hole: the records appended again take the offsets they had (their offset msgIds stay), and the hole stays
    the one end marker it is."""
    from rmqtool.structures.commitlog.recovery import filled  # start-up: numpy; the registry imports repairs

    hole = None
    for p in segments:
        empty = p.is_file() and filled(p)
        if hole is None and empty:
            hole = p
        elif hole is not None and not empty:
            return hole, p
    return hole, None


def lost_segments(segments: list[Path], segment_size: int, data_end: int) -> list[Path]:
    """The segments past the log's good records (none of their records survives), or else the one the
    good records end in (its tail was lost)."""
    after = [p for p in segments if int(p.name) >= data_end]
    if after:
        return after
    inside = [p for p in segments if int(p.name) <= data_end < int(p.name) + segment_size]
    return inside
