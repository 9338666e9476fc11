"""An index file's header against its entries, and a file cut short: verify names the file and goes on,
query skips it with a warning and answers from the others."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from cli_helpers import CONF, fixture_copy, run
from damage import corrupt

from rmqtool.structures import index

SLOTS = 64  # fixtures/broker.conf
NEWEST = Path("index") / "20231114221320002"  # indexCount 219; 1700000002058..1700000002933; 101456..151493
MIDDLE = Path("index") / "20231114221320001"  # 255 entries, from 55236 to 101456
FILE_LEN = index.file_len(SLOTS, 256)


def _verify(store: Path) -> tuple[int, dict]:
    out = run("verify", store, "--config", CONF, "--json")
    return out.returncode, json.loads(out.stdout)


HEADER_DAMAGE = {  # header field, format, value; the finding's offset, bytes, kind and reason
    "indexCount too large": (index.INDEX_COUNT_AT, ">i", 230, index.INDEX_COUNT_AT, 4, "index-count-past-entries",
                             "indexCount 230 says 229 entries, but the file holds 218 (entries 219..229 are empty)"),
    "time range wrong": (index.END_TIMESTAMP_AT, ">q", 1700003602933, index.BEGIN_TIMESTAMP_AT, 16, "index-time-range",
                         "beginTimestamp 1700000002058 to endTimestamp 1700003602933 is 3600 s, but the last entry "
                         "(218) is 0 s after the begin"),
    "endTimestamp zero": (index.END_TIMESTAMP_AT, ">q", 0, index.BEGIN_TIMESTAMP_AT, 16, "index-time-range",
                          "beginTimestamp 1700000002058 is after endTimestamp 0 (its first key's store time begins it, "
                          "its last key's ends it)"),
    "beginTimestamp after endTimestamp": (index.BEGIN_TIMESTAMP_AT, ">q", 1700000003000, index.BEGIN_TIMESTAMP_AT, 16,
                                          "index-time-range", "beginTimestamp 1700000003000 is after endTimestamp "
                                          "1700000002933 (its first key's store time begins it, its last key's ends "
                                          "it)"),
    "offset range wrong": (index.BEGIN_PHY_AT, ">q", 101556, index.BEGIN_PHY_AT, 16, "index-phy-range",
                           "beginPhyOffset 101556 to endPhyOffset 151493, but the entries run from 101456 (entry 1) "
                           "to 151493 (entry 218)"),
}


@pytest.mark.parametrize("damage", sorted(HEADER_DAMAGE))
def test_index_header_contradicting_entries_is_reported(tmp_path, damage):
    store = fixture_copy(tmp_path)
    field, fmt, value, at, nbytes, kind, reason = HEADER_DAMAGE[damage]
    with open(store / NEWEST, "r+b") as f:
        f.seek(field)
        f.write(struct.pack(fmt, value))
    code, doc = _verify(store)
    assert code == 1
    assert doc["findings"] == [{"file": str(store / NEWEST), "offset": at, "reason": reason, "bytes": nbytes,
                                "severity": "error", "structure": "index", "kind": kind}]
    assert doc["messages"] == 420 and doc["indexEntries"] == 255 + 255 + 218


def test_truncated_index_file_is_a_finding_not_a_refusal(tmp_path):
    store = fixture_copy(tmp_path)
    key = ["--topic", "OrderTopic", "--key", "中文键", "--json"]
    before = json.loads(run("query", store, "--config", CONF, *key).stdout)["messages"]
    corrupt(store, MIDDLE, "truncate", FILE_LEN // 2)

    code, doc = _verify(store)
    assert code == 1 and doc["messages"] == 420 and doc["indexEntries"] == 255 + 218
    reason = (f"index file is {FILE_LEN // 2} bytes, not the {FILE_LEN} bytes maxHashSlotNum=64, maxIndexNum=256 "
              "make (cut short or grown): its entries are not read")
    assert [f for f in doc["findings"] if f["kind"] != "key-not-indexed"] == [
        {"file": str(store / MIDDLE), "offset": 0, "reason": reason, "bytes": FILE_LEN // 2, "severity": "error",
         "structure": "index", "kind": "index-file-size"}]
    lost = [f for f in doc["findings"] if f["kind"] == "key-not-indexed"]
    assert sum(int(f["reason"].split()[0]) if "more like" in f["reason"] else 1 for f in lost) == 255  # its keys

    out = run("query", store, "--config", CONF, *key)
    assert out.returncode == 0, out.stderr
    got = [m["commitLogOffset"] for m in json.loads(out.stdout)["messages"]]
    assert got == [m["commitLogOffset"] for m in before if not 55236 <= m["commitLogOffset"] < 101456]
    warning = f"rmqtool: warning: {store / MIDDLE}: {reason}; the lookup skipped it"
    assert "".join(out.stderr.split()) == "".join(warning.split())  # as the terminal wrapped it
