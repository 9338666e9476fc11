"""Records lost in the middle of the log are named, and decode says where: an end marker written over a
record (the records behind it cut off), a segment zeroed or torn before the last. The scan skips what it
cannot read and goes on; recovery still walks as the broker does."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from damage import corrupt

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import open_reader
from rmqtool.ops.follow import follow_chunks
from rmqtool.ops.recovery import plan_recovery
from rmqtool.structures.commitlog import message
from tests.cli_helpers import CONF, FIXTURE, fixture_copy, run

SEG = 65536
MIDDLE = Path("commitlog") / f"{SEG:020d}"
VICTIM, VICTIM_SIZE = 97473, 233  # a record in the middle of segment 1, and the record after it at 97706
LAST_OF_MIDDLE, LAST_SIZE = 130776, 250  # segment 1's last record; its end marker is at 131026
FIXTURE_MESSAGES = 420
TORN_STOP = 95534  # where the last whole record of segment 1 cut at 30000 bytes ends


def blank_over(store: Path, offset: int) -> None:
    """Write the end marker's magic over the magic of the record at `offset` of segment 1 (its size stays)."""
    path = store / MIDDLE
    data = bytearray(path.read_bytes())
    struct.pack_into(">i", data, offset - SEG + message.MAGIC_OFFSET, message.BLANK_MAGIC)
    path.write_bytes(bytes(data))


def decoded(store: Path) -> tuple[int, list[int], list[dict]]:
    """(exit code, offsets of the messages decoded, error objects) of `decode commitlog --jsonl`."""
    out = run("decode", "commitlog", store, "--jsonl", "--body", "none", "--config", CONF)
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    return out.returncode, [r["commitLogOffset"] for r in rows if "error" not in r], [r for r in rows if "error" in r]


def test_undamaged_fixture_decodes_the_records_these_tests_damage():
    code, offsets, errors = decoded(FIXTURE)
    assert (code, errors, len(offsets)) == (0, [], FIXTURE_MESSAGES)
    assert {VICTIM, VICTIM + VICTIM_SIZE, LAST_OF_MIDDLE} <= set(offsets)
    assert offsets[offsets.index(LAST_OF_MIDDLE) + 1] == 2 * SEG


def test_blank_marker_over_a_middle_record_is_named_and_the_records_after_it_decoded(tmp_path):
    store = fixture_copy(tmp_path)
    blank_over(store, VICTIM)
    code, offsets, errors = decoded(store)
    assert code == 1
    assert [(e["file"], e["offset"], e["bytes"], e["kind"], e["reason"]) for e in errors] == [
        (str(store / MIDDLE), VICTIM, VICTIM_SIZE, "misplaced-blank",
         f"end-of-segment marker where records go on (it says {VICTIM_SIZE} bytes are unused, {2 * SEG - VICTIM} "
         "remain); skipped to the next record")]
    assert VICTIM not in offsets and len(offsets) == FIXTURE_MESSAGES - 1
    assert VICTIM + VICTIM_SIZE in offsets and LAST_OF_MIDDLE in offsets and 2 * SEG in offsets


def test_blank_marker_over_a_segments_last_record_names_the_rest_of_the_segment(tmp_path):
    store = fixture_copy(tmp_path)
    blank_over(store, LAST_OF_MIDDLE)
    code, offsets, errors = decoded(store)
    assert code == 1
    assert [(e["offset"], e["bytes"], e["kind"], e["reason"]) for e in errors] == [
        (LAST_OF_MIDDLE, 2 * SEG - LAST_OF_MIDDLE, "misplaced-blank",
         f"end-of-segment marker {LAST_SIZE} bytes long where {2 * SEG - LAST_OF_MIDDLE} bytes remain; the rest of "
         "the segment skipped")]
    assert LAST_OF_MIDDLE not in offsets and len(offsets) == FIXTURE_MESSAGES - 1 and 2 * SEG in offsets


def test_zeroed_middle_segment_is_named_as_lost(tmp_path):
    store = fixture_copy(tmp_path)
    corrupt(store, MIDDLE, "zero", 0, SEG)
    code, offsets, errors = decoded(store)
    assert code == 1
    assert [(e["file"], e["offset"], e["bytes"], e["kind"], e["reason"]) for e in errors] == [
        (str(store / MIDDLE), SEG, SEG, "lost-tail",
         f"records stop at offset {SEG}, {SEG} bytes before the segment's end, without an end marker while later "
         "segments hold records")]
    assert offsets[-1] > 2 * SEG and not [o for o in offsets if SEG <= o < 2 * SEG]


def test_torn_middle_segment_is_named_up_to_the_segments_end(tmp_path):
    store = fixture_copy(tmp_path)
    corrupt(store, MIDDLE, "truncate", 30000)
    code, offsets, errors = decoded(store)
    assert code == 1 and max(o for o in offsets if o < 2 * SEG) < TORN_STOP
    assert [(e["offset"], e["bytes"], e["kind"]) for e in errors] == [
        (SEG, SEG - 30000, "segment-size"), (TORN_STOP, 2 * SEG - TORN_STOP, "lost-tail")]


def test_blank_marker_mid_segment_leaves_the_brokers_recovery_walk_as_it_was(tmp_path):
    """The broker takes any end marker as its segment's end and goes on at the next segment: so does recovery."""
    cfg = StoreConfig.from_file(CONF)[0]
    before = plan_recovery(fixture_copy(tmp_path / "a"), cfg)
    store = fixture_copy(tmp_path / "b")
    blank_over(store, VICTIM)
    after = plan_recovery(store, cfg)
    assert (after.end, after.end_segment, after.stop_reason) == (before.end, before.end_segment, before.stop_reason)


def test_follow_names_a_blank_marker_over_a_middle_record_and_goes_on_after_it(tmp_path):
    store = fixture_copy(tmp_path)
    blank_over(store, VICTIM)
    reader = open_reader(store, CONF)
    chunks = follow_chunks(reader, SEG, stop=lambda: True, poll=0)
    offsets, found = [], []
    for chunk in chunks:
        found += chunk.findings
        if chunk.batch is not None:
            offsets += chunk.batch.offsets.tolist()
    assert [(f.offset, f.bytes, f.kind) for f in found] == [(VICTIM, VICTIM_SIZE, "misplaced-blank")]
    assert VICTIM not in offsets and VICTIM + VICTIM_SIZE in offsets and 2 * SEG in offsets
