"""Damage to one index entry or one index header is reported once, where it is: one flipped bit in an
entry's phyOffset does not push the entries after it past the end of the log, and an index file left past
the log's end by an interrupted write is named (and `info` does not take its header as the store's)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from cli_helpers import CONF, fixture_copy, run
from damage import corrupt

from rmqtool.structures import index
from rmqtool.structures.index.kernel import new_header

SLOTS = 64  # fixtures/broker.conf
OLDEST = Path("index") / "20231114221320000"  # 255 entries, from 0
NEWEST = Path("index") / "20231114221320002"  # 218 entries, 101456..151493
LOG_END = 151686  # where the fixture's last record ends
SEGMENTS_END = 3 * 65536  # where its last segment file ends
FILE_LEN = index.file_len(SLOTS, 256)


def _verify(store: Path) -> tuple[int, dict]:
    out = run("verify", store, "--config", CONF, "--json")
    return out.returncode, json.loads(out.stdout)


def _phy_offset(path: Path, n: int) -> int:
    at = index.entry_position(SLOTS, n) + index.PHY_OFFSET_AT
    return struct.unpack_from(">q", path.read_bytes(), at)[0]


@pytest.mark.parametrize(("rel", "n"), [(OLDEST, 1), (OLDEST, 5), (OLDEST, 255), (NEWEST, 218)],
                         ids=["first entry", "middle entry", "last entry", "last entry of the newest file"])
def test_one_flipped_bit_in_an_entry_offset_is_one_finding_not_every_later_entry_stale(tmp_path, rel, n):
    store = fixture_copy(tmp_path)
    right = _phy_offset(store / rel, n)
    corrupt(store, rel, "flip", index.entry_position(SLOTS, n) + index.PHY_OFFSET_AT)  # the top byte: +2^60
    wrong = right + (1 << 60)
    assert _phy_offset(store / rel, n) == wrong

    code, doc = _verify(store)
    assert code == 1
    assert doc["findings"] == [{
        "file": str(store / rel), "offset": index.entry_position(SLOTS, n),
        "reason": f"entry {n} (hash {_key_hash(store / rel, n)}) points at {wrong}, past the end of the log's "
                  f"segments ({SEGMENTS_END}): its phyOffset is damaged (its neighbours say it indexes the record at "
                  f"{right})",
        "bytes": index.ENTRY_LEN, "severity": "error", "structure": "index", "kind": "index-entry-wrong-key"}]
    assert (doc["problems"], doc["warnings"]) == (1, 0)
    assert doc["messages"] == 420 and doc["indexEntries"] == 255 + 255 + 218


def _key_hash(path: Path, n: int) -> int:
    return struct.unpack_from(">i", path.read_bytes(), index.entry_position(SLOTS, n) + index.KEY_HASH_AT)[0]


def test_index_file_left_past_the_log_end_by_an_interrupted_write_is_reported_and_not_taken_by_info(tmp_path):
    store = fixture_copy(tmp_path)
    left = Path("index") / "20231114221320003"
    raw = bytearray(FILE_LEN)
    raw[: index.HEADER_LEN] = new_header(1_000_000, 1700000009999)  # indexCount 1: no key put yet
    (store / left).write_bytes(bytes(raw))

    code, doc = _verify(store)
    assert code == 1
    assert doc["findings"] == [{
        "file": str(store / left), "offset": index.BEGIN_PHY_AT,
        "reason": f"index file {left.name} begins at 1000000, past the end of the log ({LOG_END}): left by an "
                  "interrupted write",
        "bytes": 16, "severity": "error", "structure": "index", "kind": "index-file-past-log-end"}]

    out = run("info", store, "--config", CONF, "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)["index"]
    assert got == {"files": 4, "fileSize": FILE_LEN, "entries": 728, "pastLogEnd": [left.name],
                   "firstBeginTimestamp": 1700000000000, "lastEndTimestamp": 1700000002933,
                   "lastEndPhyOffset": 151493}


def test_info_counts_an_index_count_past_max_index_num_as_the_file_holds_at_most(tmp_path):
    store = fixture_copy(tmp_path)
    with open(store / NEWEST, "r+b") as f:
        f.seek(index.INDEX_COUNT_AT)
        f.write(struct.pack(">i", 300))  # maxIndexNum is 256: a file holds at most 255

    out = run("info", store, "--config", CONF, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["index"]["entries"] == 255 + 255 + 255
