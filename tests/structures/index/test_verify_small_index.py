"""verify on a store of many small index files (64 slots, 256 entries each), clean and with one
index entry pointing at the wrong record."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run

from rmqtool.structures import index

SLOTS, ENTRIES, MESSAGES = 64, 256, 3000
TOPIC = "SmallIndexTopic"


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> tuple[Path, Path]:
    """A store loaded by `rmqtool import` with small index files (and 256 KiB segments, so index
    files straddle the windows verify reads the log in)."""
    tmp = tmp_path_factory.mktemp("small-index")
    conf = tmp / "broker.conf"
    conf.write_text(f"maxHashSlotNum={SLOTS}\nmaxIndexNum={ENTRIES}\nmappedFileSizeCommitLog=262144\n")
    rows = tmp / "rows.jsonl"
    rows.write_text("".join(json.dumps({"topic": TOPIC, "queueId": i % 4, "bodyText": f"body-{i:05d}",
                                        "tags": "t", "keys": [f"k{i}"]}) + "\n" for i in range(MESSAGES)))
    store = tmp / "store"
    out = run("import", store, rows, "--config", conf, "--store-timestamp", "1700000000000")
    assert out.returncode == 0, out.stderr
    return store, conf


def _verify(store: Path, conf: Path) -> tuple[int, dict]:
    out = run("verify", store, "--config", conf, "--json")
    return out.returncode, json.loads(out.stdout)


def _entries(path: Path) -> np.ndarray:
    buf = path.read_bytes()
    count = int(index.decode_header(buf)["indexCount"])
    return index.decode_entries(buf, SLOTS, count)  # entry 0 is the unused placeholder


def test_a_store_of_many_small_index_files_verifies_clean(small_store):
    store, conf = small_store
    files = sorted((store / "index").iterdir())
    assert len(files) >= 20  # two keys a message (UNIQ_KEY and KEYS), 255 entries a file
    code, doc = _verify(store, conf)
    assert code == 0, doc["findings"]
    assert doc["findings"] == []
    assert doc["messages"] == MESSAGES and doc["indexEntries"] == 2 * MESSAGES


def test_an_entry_of_a_later_index_file_pointing_at_the_wrong_record_is_found(small_store, tmp_path):
    src, conf = small_store
    store = tmp_path / "store"
    shutil.copytree(src, store)
    path = sorted((store / "index").iterdir())[-3]
    entries = _entries(path)
    k = next(n for n in range(100, len(entries)) if entries["phyOffset"][n] != entries["phyOffset"][n + 10])
    right, wrong = int(entries["phyOffset"][k]), int(entries["phyOffset"][k + 10])
    at = index.HEADER_LEN + SLOTS * index.SLOT_LEN + k * index.ENTRY_LEN
    with open(path, "r+b") as f:
        f.seek(at + index.PHY_OFFSET_AT)
        f.write(struct.pack(">q", wrong))

    code, doc = _verify(store, conf)
    assert code == 1
    got = [(f["file"], f["offset"], f["kind"], f["severity"], f["bytes"]) for f in doc["findings"]]
    assert got == [
        (str(store / "index"), right, "key-not-indexed", "error", 0),
        (str(path), at, "index-entry-wrong-key", "error", index.ENTRY_LEN),
    ]
    wrong_key = doc["findings"][1]["reason"]
    assert wrong_key == (f"entry {k} (hash {int(entries['keyHash'][k])}) points at {wrong}, which holds no such key")
