"""One store file given alone: `verify FILE` checks that file and nothing else; `decode commitlog FILE` of a
segment whose name is not an offset reads its start from its first record."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

from cli_helpers import CONF, FIXTURE, run

from rmqtool.structures import consumequeue

SEG = 65536
MIDDLE = FIXTURE / "commitlog" / f"{SEG:020d}"  # 187 records, the first at 65536
SECOND_RECORD = (SEG + 245, 323)  # (offset, size) of its second record
QUEUE_FILE = FIXTURE / "consumequeue" / "OrderTopic" / "0" / f"{0:020d}"  # 33 entries
BODY_AT = 88  # a record's body starts after its 84 fixed bytes (IPv4 hosts) and the body length


def verify_json(path: Path) -> tuple[int, dict]:
    out = run("verify", path, "--config", CONF, "--json")
    return out.returncode, json.loads(out.stdout)


def test_verify_segment_checked_the_whole_store():
    code, doc = verify_json(MIDDLE)
    assert (code, doc["messages"], doc["queueEntries"], doc["indexEntries"]) == (0, 187, 0, 0)
    assert (doc["problems"], doc["warnings"], doc["findings"]) == (0, 0, [])
    assert (doc["file"], doc["fileKind"]) == (str(MIDDLE), "commitlog segment")


def test_verify_segment_missed_its_own_bad_crc(tmp_path: Path):
    store = tmp_path / "store"
    (store / "commitlog").mkdir(parents=True)
    seg = store / "commitlog" / MIDDLE.name
    raw = bytearray(MIDDLE.read_bytes())
    raw[SECOND_RECORD[0] - SEG + BODY_AT] ^= 0xFF
    seg.write_bytes(raw)
    code, doc = verify_json(seg)
    assert (code, doc["messages"], doc["problems"], doc["warnings"]) == (1, 186, 1, 0)
    [found] = doc["findings"]
    assert (found["file"], found["offset"], found["bytes"], found["structure"]) == (str(seg), *SECOND_RECORD,
                                                                                    "commitlog")
    assert found["reason"].startswith("body CRC mismatch")


def test_verify_queue_file_was_read_as_a_segment():
    code, doc = verify_json(QUEUE_FILE)
    assert (code, doc["messages"], doc["queueEntries"], doc["problems"], doc["findings"]) == (0, 0, 33, 0, [])
    assert doc["fileKind"] == "consume-queue file"


def test_verify_queue_file_missed_an_entry_of_the_wrong_size(tmp_path: Path):
    store = tmp_path / "store"
    shutil.copytree(FIXTURE, store)
    path = store / QUEUE_FILE.relative_to(FIXTURE)
    raw = bytearray(path.read_bytes())
    at = consumequeue.byte_of(2) + consumequeue.ENTRY.offset("size")
    size = struct.unpack_from(">i", raw, at)[0]
    struct.pack_into(">i", raw, at, size + 1)
    path.write_bytes(raw)
    code, doc = verify_json(path)
    assert (code, doc["queueEntries"], doc["problems"]) == (1, 33, 1)
    [found] = doc["findings"]
    # a queue's finding names its folder and the entry's byte in the queue, as for a whole store
    assert (found["file"], found["offset"], found["bytes"], found["kind"]) == (str(path.parent), 40, 20,
                                                                               "entry-mismatch")
    assert found["reason"] == f"entry 2 does not match the record at 18231 (OrderTopic/0 queue offset 2, size " \
        f"{size}, tagsCode 2598920)"


def test_verify_took_a_file_of_zeros_for_a_segment(tmp_path: Path):
    blank = tmp_path / "blank.bin"
    blank.write_bytes(bytes(4000))  # zeros: an unwritten segment, queue file, index file or checkpoint alike
    out = run("verify", blank)
    assert out.returncode == 2
    assert out.stderr == (f"rmqtool: error: {blank}: cannot tell which store file this is (it could be a commitlog "
                          "segment, a consume-queue file, an index file or a checkpoint): give it at its place in a "
                          "store\n")


def test_renamed_segment_decoded_zero_messages(tmp_path: Path):
    renamed = tmp_path / "seg.bin"
    shutil.copy(MIDDLE, renamed)
    out = run("decode", "commitlog", renamed, "--jsonl", "--body", "none")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 187 and not any("error" in r for r in rows)
    assert (rows[0]["commitLogOffset"], rows[1]["commitLogOffset"]) == (SEG, SECOND_RECORD[0])
    assert out.stderr == (f"{renamed}: its name is not an offset; its first record says it starts at {SEG}: read as "
                          f"{SEG:020d}\n")
    misnamed = tmp_path / f"{0:020d}"  # a name that is an offset is believed, as before
    shutil.copy(MIDDLE, misnamed)
    out = run("decode", "commitlog", misnamed, "--jsonl", "--body", "none")
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert out.returncode == 1 and len(rows) == 187
    assert rows[0]["error"] == f"physicalOffset field {SEG} != position 0"


def test_verify_renamed_segment_reported_every_record(tmp_path: Path):
    renamed = tmp_path / "seg.bin"
    shutil.copy(MIDDLE, renamed)
    out = run("verify", renamed, "--json")
    doc = json.loads(out.stdout)
    assert (out.returncode, doc["messages"], doc["problems"], doc["findings"]) == (0, 187, 0, [])
    assert out.stderr == (f"{renamed}: its name is not an offset; its first record says it starts at {SEG}: read as "
                          f"{SEG:020d}\n")
