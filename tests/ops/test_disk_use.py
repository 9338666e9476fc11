"""`info`'s disk use: each structure's files as `du` (allocated) and `ls -l` (apparent) count them, asked of the
registry's structures; each topic's share of the commitlog equal to a full decode's storeSize sums."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

from cli_helpers import run, writable_copy
from damage import FIXTURE, SEG

from rmqtool.ops.info import store_info


def _du(files: list[Path], apparent: bool) -> int:
    """What `du` says of `files`, in bytes (allocated blocks, or with --apparent-size the sizes)."""
    done = subprocess.run(["du", "-B1", "-c", *(["--apparent-size"] if apparent else []), *map(str, files)],
                          capture_output=True, text=True, check=True)
    return int(done.stdout.splitlines()[-1].split()[0])


def _parts(doc: dict) -> dict[str, tuple[int, int, int]]:
    return {p["name"]: (p["files"], p["allocatedBytes"], p["apparentBytes"]) for p in doc["disk"]["parts"]}


def test_info_disk_gives_each_structures_bytes_as_du_and_ls_count_them_on_a_sparse_segment(tmp_path, golden_basic):
    root = writable_copy(golden_basic / "store", tmp_path / "store")
    last = sorted((root / "commitlog").iterdir())[-1]
    os.truncate(last, 4 * SEG)  # a preallocated-looking segment: 3 segments' worth of holes, no blocks
    (root / "lost").mkdir()
    (root / "lost" / "plan.json").write_text("{}")
    doc = store_info(root, golden_basic / "broker.conf")
    parts = _parts(doc)
    for name, folder in (("commitlog", "commitlog"), ("consumequeue", "consumequeue"), ("index", "index"),
                         ("config", "config"), ("lost", "lost")):
        files = [p for p in (root / folder).rglob("*") if p.is_file()]
        assert parts[name] == (len(files), _du(files, apparent=False), _du(files, apparent=True)), name
    assert parts["checkpoint"][2] == 4096 and parts["store files"][:1] == (1,)  # lock
    commitlog = parts["commitlog"]
    assert commitlog[2] - commitlog[1] >= 3 * SEG - 4096  # the sparse tail: apparent, not allocated
    assert [p["owner"] for p in doc["disk"]["parts"]][-1] == "other"
    every = [p for p in root.rglob("*") if p.is_file()]
    assert (doc["disk"]["files"], doc["disk"]["allocatedBytes"], doc["disk"]["apparentBytes"]) == (
        len(every), _du(every, apparent=False), _du(every, apparent=True))


def test_a_topic_named_like_a_structures_folder_is_counted_as_consume_queue(tmp_path):
    root = writable_copy(FIXTURE, tmp_path / "store")
    queue = root / "consumequeue" / "OrderTopic"
    queue.rename(root / "consumequeue" / "config")  # a topic called config
    (root / "consumequeue" / "checkpoint" / "0").mkdir(parents=True)
    parts = _parts(store_info(root))
    assert parts["consumequeue"][0] == 19 and "config" not in parts
    assert parts["checkpoint"][0] == 1


def test_the_commitlog_share_per_topic_equals_a_full_decodes_store_sizes(golden_basic):
    doc = store_info(golden_basic / "store", golden_basic / "broker.conf")
    out = run("export", golden_basic / "store", "--config", golden_basic / "broker.conf")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    sizes, counts = Counter(), Counter()
    for r in rows:
        sizes[r["topic"]] += r["storeSize"]
        counts[r["topic"]] += 1
    share = doc["disk"]["commitlogTopics"]
    assert {t["topic"]: (t["messages"], t["bytes"]) for t in share["topics"]} == {
        t: (counts[t], sizes[t]) for t in sizes}
    assert share["logDataBytes"] == doc["commitlog"]["dataBytes"]
    assert share["unattributedBytes"] == share["logDataBytes"] - sum(sizes.values()) > 0  # the segments' end blanks
    assert [t["bytes"] for t in share["topics"]] == sorted((t["bytes"] for t in share["topics"]), reverse=True)


def test_the_commitlog_share_leaves_out_the_records_a_truncated_segment_lost(tmp_path):
    root = writable_copy(FIXTURE, tmp_path / "store")
    os.truncate(root / "commitlog" / f"{SEG:020d}", 3000)
    share = store_info(root)["disk"]["commitlogTopics"]
    assert share["logDataBytes"] == 151686 - (2 * SEG - (SEG + 3000))
    assert sum(t["messages"] for t in share["topics"]) == 233


def test_info_prints_disk_use_and_the_commitlog_by_topic(fixture_store):
    out = run("info", fixture_store)
    assert out.returncode == 0, out.stderr
    text = out.stdout.split("\ndisk use", 1)[1]
    lines = text.splitlines()
    assert lines[0] == " in bytes (allocated: as du counts; apparent: ls -l)"
    assert lines[1].split() == ["structure", "files", "allocated", "apparent"]
    assert lines[3].split()[:2] == ["commitlog", "3"] and lines[3].split()[3] == "196608"
    assert "commitlog by topic (record bytes, from queue entries)" in text
    assert "PaymentTopic              129  49631   32.7%" in text
    assert "no topic: 5149 bytes (3.4% of the log's 151686) no queue entry points at" in text


def test_a_rocksdb_stores_queue_files_are_the_consume_queues_and_a_folder_no_structure_owns_is_named(golden_v5):
    doc = store_info(golden_v5 / "store", golden_v5 / "broker.conf")
    parts = _parts(doc)
    rocks = [p for p in (golden_v5 / "store" / "consumequeue").iterdir() if p.is_file()]
    assert parts["consumequeue"] == (len(rocks), _du(rocks, apparent=False), _du(rocks, apparent=True))
    assert parts["store files"][0] == 2  # lock and the broker's abort.bak
    assert [(p["name"], p["owner"]) for p in doc["disk"]["parts"]][-1] == ("compaction", "other")
