"""What the commitlog plans for records whose queue offsets skip those of records lost before them: a cut where
the records after a filled hole start (the hole `recover --thorough` wrote back as one end marker), the damage
cut when a damaged record lost them, and a named refusal when nothing in the log says where they went."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from rmqtool.report import COMMITLOG, CONSUMEQUEUE, Finding
from rmqtool.structures.commitlog import message
from rmqtool.structures.commitlog.repairs import renumbered, renumbered_kinds, repairs
from rmqtool.structures.consumequeue.structure import CONSUME_QUEUES
from rmqtool.structures.structure import CANNOT_MEND, CUT_AND_REPACK, REBUILD_QUEUES

SEG = 4096
GAP = "queue-offset-gap"


def segments(root: Path, filled: set[int]) -> list[Path]:
    """Four segments; those whose index is in `filled` hold one end marker, as `recover --thorough` fills a hole."""
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(4):
        p = root / f"{i * SEG:020d}"
        head = message.encode_blank(SEG) if i in filled else b"\x00\x00\x01\x00"  # an end marker, or a record
        p.write_bytes(head + bytes(SEG - len(head)))
        out.append(p)
    return out


def queue(name: str, offset: int, kind: str) -> Finding:
    return Finding(f"consumequeue/{name}", offset, kind, 20, structure=CONSUMEQUEUE, kind=kind)


GAPPED = [queue("A/0", 200, GAP), queue("A/0", 200, "entry-mismatch"), queue("A/0", 220, "entry-mismatch"),
          queue("A/0", 600, "record-without-entry")]


def test_records_after_a_filled_hole_are_cut_where_they_start_and_appended_again(tmp_path):
    log = segments(tmp_path, {1, 2})
    (cut,) = repairs(GAPPED, log, SEG, 4 * SEG)
    assert (cut.action, cut.target, cut.at) == (CUT_AND_REPACK, str(log[3]), 3 * SEG)
    assert cut.kinds == ("entry-mismatch", GAP, "record-without-entry")
    assert cut.reason.startswith(f"segment {log[1].name} holds no record (a missing segment filled with an end marker)")


def test_a_queue_finding_elsewhere_of_the_same_kind_is_left_to_the_rebuild(tmp_path):
    """The doctor counts what a step mends by kind: a kind the rebuild also mends is not claimed by the cut."""
    log = segments(tmp_path, {1})
    other = queue("B/0", 40, "entry-mismatch")
    findings = [*GAPPED, other]
    assert renumbered(findings) == GAPPED
    assert renumbered_kinds(findings) == (GAP, "record-without-entry")
    (cut,) = repairs(findings, log, SEG, 4 * SEG)
    assert (cut.at, cut.kinds) == (2 * SEG, (GAP, "record-without-entry"))
    view = SimpleNamespace(paths=SimpleNamespace(consumequeue=tmp_path / "consumequeue"))
    (rebuild,) = CONSUME_QUEUES.repairs(SimpleNamespace(findings=findings), view)
    assert (rebuild.action, rebuild.kinds) == (REBUILD_QUEUES, ("entry-mismatch",))


def test_a_damaged_record_before_the_gap_is_the_one_cut(tmp_path):
    log = segments(tmp_path, set())
    crc = Finding(str(log[1]), SEG + 100, "body CRC mismatch", 172, structure=COMMITLOG, kind="crc-mismatch")
    (cut,) = repairs([crc, *GAPPED], log, SEG, 4 * SEG)
    assert (cut.action, cut.at, cut.target) == (CUT_AND_REPACK, SEG + 100, str(log[1]))
    assert cut.kinds == ("crc-mismatch", "entry-mismatch", GAP, "record-without-entry")


def test_a_gap_nothing_in_the_log_explains_is_named_not_rebuilt(tmp_path):
    """A raised queueOffset field (outside the body CRC) skips offsets no record lost: no cut point is known."""
    log = segments(tmp_path, set())
    (named,) = repairs(GAPPED, log, SEG, 4 * SEG)
    assert (named.action, named.kinds) == (CANNOT_MEND, ("entry-mismatch", GAP, "record-without-entry"))
    assert "`rmqtool import --repack`" in named.reason


def test_a_missing_segment_is_the_one_thing_named(tmp_path):
    log = segments(tmp_path, set())
    missing = Finding(str(log[1]), SEG, "gap in the segment sequence", SEG, structure=COMMITLOG, kind="missing-segment")
    assert [(r.action, r.kinds) for r in repairs([missing, *GAPPED], log, SEG, 4 * SEG)] == [
        (CANNOT_MEND, ("missing-segment",))]


def test_the_commitlog_plans_for_the_kind_the_consume_queue_check_names():
    from rmqtool.structures.commitlog import repairs as plans
    from rmqtool.structures.consumequeue import check

    assert check.QUEUE_OFFSET_GAP == plans.QUEUE_OFFSET_GAP == GAP
