"""`recover` and `clean` answer at a glance: a summary first with the exact numbers lost, dropped,
removed or freed (computed by the plans), details grouped after it, every item with `--all`."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from cli_helpers import CONF, FIXTURE, fixture_copy, run
from tail_damage import CUT_AT, GARBAGE, LAST_SEGMENT, LOG_END, SEG, crash_with_damaged_tail

from rmqtool.cli import output
from rmqtool.structures import consumequeue, index
from rmqtool.structures.commitlog import message
from rmqtool.text import iso_time

MAX_SUMMARY_LINES = 15  # the default output stays this short however many files or messages go
TIMESTAMP = "1700000000000"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return fixture_copy(tmp_path)


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file()}


def records(root: Path, conf: str = str(CONF)) -> list[dict]:
    out = run("decode", "commitlog", root, "--config", conf, "--jsonl", "--body", "none")
    return [r for r in map(json.loads, out.stdout.splitlines()) if "msgId" in r]


def queue_entries_from(root: Path, offset: int) -> int:
    """Consume-queue entries (by the broker's read rule) that point at or past `offset`."""
    n = 0
    for f in (p for p in (root / "consumequeue").rglob("*") if p.is_file() and len(p.name) == 20):
        entries = consumequeue.decode_entries(f.read_bytes())
        n += int((entries["commitLogOffset"][: consumequeue.written_count(entries)] >= offset).sum())
    return n


def index_entries(files: list[Path]) -> int:
    return sum(int(index.decode_header(f.read_bytes())["indexCount"]) - index.FIRST_INDEX for f in files)


def test_recover_dry_run_summary_counts_exactly_the_records_cut_and_the_garbage(store):
    cut = [r for r in records(store) if r["commitLogOffset"] >= CUT_AT]
    assert len(cut) == 3
    record_bytes = sum(r["storeSize"] for r in cut)
    queue_dropped = queue_entries_from(store, CUT_AT)
    index_files = sorted((store / "index").iterdir())
    crash_with_damaged_tail(store)
    before = digest(store)
    out = run("recover", store, "--config", CONF, "--dry-run", "--json")
    assert out.returncode == 0, out.stderr
    assert digest(store) == before
    doc = json.loads(out.stdout)
    assert doc["recoveryPoint"] == {"offset": CUT_AT, "segment": LAST_SEGMENT, "position": CUT_AT - 2 * SEG,
                                    "lastStoreTimestamp": records(FIXTURE)[-4]["storeTimestamp"]}
    assert (doc["messagesLost"], doc["messageBytesLost"], doc["tornBytes"], doc["bytesLost"]) == (
        3, record_bytes, GARBAGE, record_bytes + GARBAGE)
    assert doc["queueEntriesDropped"] == queue_dropped == 3 and doc["queuesChanged"] == 3
    assert doc["indexEntriesDropped"] == index_entries(index_files) and doc["indexFilesDropped"] == 3
    assert doc["filesRemoved"] == 3 and doc["filesRemovedByStructure"] == {"index": 3}
    # the fields scripts already read are all still there
    assert doc["droppedMessageCount"] == 3 and [m["msgId"] for m in doc["droppedMessages"]] == [
        r["msgId"] for r in cut]
    assert doc["truncated"][0] == {"file": str(store / "commitlog" / LAST_SEGMENT), "from": CUT_AT - 2 * SEG,
                                   "to": LOG_END - 2 * SEG + GARBAGE, "bytes": record_bytes + GARBAGE,
                                   "reason": "commitlog ends here (body CRC mismatch)"}
    assert len(doc["deletedFiles"]) == 3 and doc["index"]["filesDropped"] == [str(f) for f in index_files]


def test_recover_human_output_leads_with_the_summary(store):
    kept = [r for r in records(store) if r["commitLogOffset"] < CUT_AT]
    cut = [r for r in records(store) if r["commitLogOffset"] >= CUT_AT]
    record_bytes = sum(r["storeSize"] for r in cut)
    crash_with_damaged_tail(store)
    out = run("recover", store, "--config", CONF, "--dry-run")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == ("recover --dry-run (nothing changed): after a crash (abort present), records checked from "
                        f"segment {0:020d}")
    assert lines[1] == (f"  recovery point: commitlog offset {CUT_AT} = segment {LAST_SEGMENT} + {CUT_AT - 2 * SEG} "
                        "(body CRC mismatch there)")
    assert lines[2] == f"  last record:    stored at {iso_time(kept[-1]['storeTimestamp'])}"
    assert lines[3] == (f"  would lose:     3 messages; {record_bytes + GARBAGE} bytes past the recovery point: "
                        f"{record_bytes} bytes of records, {GARBAGE} bytes torn or garbage")
    assert lines[4].startswith("  consume queues: would drop 3 entries, ")
    assert lines[5].startswith("  index:          would drop ") and " entries in 3 files, " in lines[5]
    assert lines[6] == "  files:          would remove 3 (3 index files)"
    assert lines[7].startswith("  lost/ folder:   would keep 4 cut ranges and 3 removed files in lost/")
    assert lines[8] == "details (--all lists every item):"
    assert "  delete 3 index files (index/" in out.stdout and out.stdout.count("\n  delete ") == 1
    assert len(lines) <= MAX_SUMMARY_LINES
    full = run("recover", store, "--config", CONF, "--dry-run", "--all").stdout.splitlines()
    assert full[:7] == lines[:7]
    assert [ln for ln in full if ln.startswith("  drop message ")] == [
        f"  drop message {r['msgId']} at {r['commitLogOffset']} ({r['topic']}/{r['queueId']})" for r in cut]
    assert sum(ln.startswith("  delete index/") for ln in full) == 3


def test_real_recovery_reports_what_the_dry_run_said_and_loses_exactly_that(store):
    crash_with_damaged_tail(store)
    keys = ("recoveryPoint", "messagesLost", "bytesLost", "messageBytesLost", "tornBytes", "queueEntriesDropped",
            "indexEntriesDropped", "filesRemoved", "indexKeysAdded", "queueEntriesAdded")
    dry = json.loads(run("recover", store, "--config", CONF, "--dry-run", "--json").stdout)
    out = run("recover", store, "--config", CONF)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("recovered: after a crash (abort present)")
    assert lines[3].startswith(f"  lost:           3 messages; {dry['bytesLost']} bytes past the recovery point")
    assert lines[6] == "  files:          removed 3 (3 index files)"
    assert [r["commitLogOffset"] for r in records(store)][-1] < CUT_AT
    seg = (store / "commitlog" / LAST_SEGMENT).read_bytes()
    assert not any(seg[CUT_AT - 2 * SEG :])
    again = json.loads(run("recover", store, "--config", CONF, "--dry-run", "--json").stdout)
    assert {k: again[k] for k in keys[1:8]} == dict.fromkeys(keys[1:8], 0)
    assert again["recoveryPoint"]["offset"] == dry["recoveryPoint"]["offset"] == CUT_AT
    # the real run counts what it did; the dry run counted the same beforehand
    crashed = store.parent / "again"
    shutil.copytree(FIXTURE, crashed)
    for p in crashed.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    crash_with_damaged_tail(crashed)
    done = json.loads(run("recover", crashed, "--config", CONF, "--json").stdout)
    assert {k: done[k] for k in keys} == {k: dry[k] for k in keys}


def test_a_torn_last_record_its_queue_had_taken_is_a_lost_message(store):
    last = records(store)[-1]
    at = last["commitLogOffset"] - 2 * SEG
    kept = message.header_len(last["sysFlag"])  # the header reached the disk, the rest did not
    seg = store / "commitlog" / LAST_SEGMENT
    b = bytearray(seg.read_bytes())
    b[at + kept : at + last["storeSize"]] = bytes(last["storeSize"] - kept)
    seg.write_bytes(bytes(b))
    doc = json.loads(run("recover", store, "--config", CONF, "--dry-run", "--json").stdout)
    torn = len(bytes(b[at : at + kept]).rstrip(b"\0"))
    assert doc["mode"] == "clean" and doc["recoveryPoint"]["offset"] == last["commitLogOffset"]
    assert (doc["messagesLost"], doc["tornMessages"], doc["droppedMessageCount"]) == (1, 1, 0)
    assert (doc["bytesLost"], doc["tornBytes"], doc["messageBytesLost"]) == (torn, torn, 0)
    assert doc["queueEntriesDropped"] == 1 and doc["indexEntriesDropped"] == 0 and doc["filesRemoved"] == 0
    lines = run("recover", store, "--config", CONF, "--dry-run").stdout.splitlines()
    assert lines[3] == (f"  would lose:     1 message (1 torn, known by their queue entries); {torn} bytes past the "
                        f"recovery point: 0 bytes of records, {torn} bytes torn or garbage")
    assert "  lose 1 torn message: consume-queue entries past the recovery point whose records no longer parse" in lines


def test_records_overwritten_by_garbage_after_a_crash_are_counted_as_lost_messages(store):
    """The scale run's crash: the last 4 KiB of the log overwritten, so the records there parse no more."""
    recs = records(store)
    seg = store / "commitlog" / LAST_SEGMENT
    b = bytearray(seg.read_bytes())
    b[LOG_END - 2 * SEG - 4096 : LOG_END - 2 * SEG] = (bytes(range(1, 256)) * 17)[:4096]
    seg.write_bytes(bytes(b))
    (store / "abort").touch()
    hit = [r for r in recs if r["commitLogOffset"] + r["storeSize"] > LOG_END - 4096]
    queued = queue_entries_from(store, hit[0]["commitLogOffset"])
    doc = json.loads(run("recover", store, "--config", CONF, "--dry-run", "--json").stdout)
    assert doc["recoveryPoint"]["offset"] == hit[0]["commitLogOffset"]
    assert doc["queueEntriesDropped"] == queued == len(hit)
    assert (doc["messagesLost"], doc["tornMessages"], doc["droppedMessageCount"]) == (len(hit), len(hit), 0)


def test_recover_default_output_stays_short_however_many_index_files_go(tmp_path):
    conf = small_index_conf(tmp_path)
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"topic": "T", "bodyText": f"m{i}", "keys": f"k-{i}"}) + "\n"
                            for i in range(300)))
    store = tmp_path / "store"
    assert run("import", store, rows, "--config", conf, "--store-timestamp", TIMESTAMP).returncode == 0
    files = sorted((store / "index").iterdir())
    assert len(files) == 40  # 600 keys (UNIQ_KEY and KEYS), 15 a file
    (store / "abort").touch()
    (store / "checkpoint").unlink()
    out = run("recover", store, "--config", conf, "--dry-run")
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) <= MAX_SUMMARY_LINES
    assert lines[5] == "  index:          would drop 600 entries in 40 files, re-dispatch would add 600 keys"
    assert f"  delete 40 index files (index/{files[0].name} .. index/{files[-1].name}): " in out.stdout
    full = run("recover", store, "--config", conf, "--dry-run", "--all").stdout.splitlines()
    assert [ln.split(":")[0] for ln in full if ln.startswith("  delete ")] == [
        f"  delete index/{f.name}" for f in files]


# ---- clean ---------------------------------------------------------------------------------------

def expire(root: Path, *segments: int) -> None:
    for start in segments:
        os.utime(root / "commitlog" / f"{start:020d}", (1_000_000, 1_000_000))


def sizes(files: list[Path]) -> tuple[int, int]:
    return sum(f.stat().st_size for f in files), sum(f.stat().st_blocks * 512 for f in files)


def test_clean_dry_run_says_what_would_go_and_changes_nothing_then_the_real_run_frees_it(store):
    expire(store, 0, SEG)
    gone_log = [store / "commitlog" / f"{s:020d}" for s in (0, SEG)]
    gone_index = sorted((store / "index").iterdir())[:2]  # every entry of the first two points below 2 * SEG
    log_bytes, log_disk = sizes(gone_log)
    index_bytes, index_disk = sizes(gone_index)
    total = log_bytes + index_bytes
    before = digest(store)
    out = run("clean", store, "--config", CONF, "--dry-run", "--json")
    assert out.returncode == 0 and digest(store) == before
    doc = json.loads(out.stdout)
    assert (doc["filesDeleted"], doc["bytesFreed"], doc["diskBytesFreed"]) == (4, total, log_disk + index_disk)
    assert doc["freed"] == {"commitlog": {"files": 2, "bytes": log_bytes, "diskBytes": log_disk},
                            "consumequeue": {"files": 0, "bytes": 0, "diskBytes": 0},
                            "index": {"files": 2, "bytes": index_bytes, "diskBytes": index_disk}}
    assert [d["file"] for d in doc["deletedFiles"]] == [str(f) for f in gone_log + gone_index]
    assert (doc["minOffset"], doc["minOffsetBefore"]) == (2 * SEG, 0)

    human = run("clean", store, "--config", CONF, "--dry-run").stdout.splitlines()
    assert digest(store) == before
    assert human[0] == (f"would delete 4 files, {total / 1024:.1f} KiB ({total} bytes); the commitlog would then "
                        f"start at {2 * SEG} (now at 0); nothing changed (dry run)")
    assert human[1] == f"  commitlog:       2 files, 128.0 KiB ({log_bytes} bytes)"
    assert human[2] == "  consume queues:  0 files, 0 bytes"
    assert human[3].startswith(f"  index:           2 files, {index_bytes / 1024:.1f} KiB ({index_bytes} bytes)")
    assert human[4:6] == ["details:", f"  would delete commitlog/{0:020d}, 64.0 KiB (65536 bytes): modified more "
                          "than fileReservedTime=72 h ago"]
    assert len(human) == 9

    real = run("clean", store, "--config", CONF)
    assert real.returncode == 0, real.stderr
    lines = real.stdout.splitlines()
    assert lines[0] == (f"deleted 4 files, freed {total / 1024:.1f} KiB ({total} bytes); the commitlog now starts "
                        f"at {2 * SEG} (was at 0)")
    assert lines[1:4] == human[1:4]
    assert not any(f.exists() for f in gone_log + gone_index)
    assert sorted(p.name for p in (store / "commitlog").iterdir()) == [LAST_SEGMENT]
    nothing = run("clean", store, "--config", CONF, "--dry-run").stdout.splitlines()
    assert nothing == ["nothing to delete: no segment but the newest was modified more than 72 h ago (a file's age "
                       f"is its mtime, as the broker's: a store copied today is not expired); the commitlog starts "
                       f"at {2 * SEG}"]


def test_clean_frees_orphaned_queue_and_index_files_and_groups_a_long_list(tmp_path):
    conf = small_index_conf(tmp_path)
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"topic": "T", "bodyText": "x" * 100, "keys": f"k-{i}"}) + "\n"
                            for i in range(1500)))
    store = tmp_path / "store"
    assert run("import", store, rows, "--config", conf, "--store-timestamp", TIMESTAMP, "--queues", "1"
               ).returncode == 0
    segments = sorted((store / "commitlog").iterdir())
    expire(store, *(int(p.name) for p in segments[:2]))
    min_offset = int(segments[2].name)
    queue_files = sorted((store / "consumequeue" / "T" / "0").iterdir())
    gone_queue = [f for f in queue_files[:-1]
                  if int(consumequeue.decode_entries(f.read_bytes())["commitLogOffset"][-1]) < min_offset]
    index_files = sorted((store / "index").iterdir())
    gone_index = [f for f in index_files[:-1]
                  if int(index.decode_header(f.read_bytes())["endPhyOffset"]) < min_offset]
    assert (len(gone_queue), len(gone_index)) == (2, 71)
    gone = segments[:2] + gone_queue + gone_index
    before = digest(store)
    doc = json.loads(run("clean", store, "--config", conf, "--dry-run", "--json").stdout)
    assert doc["freed"]["commitlog"] == dict(zip(("files", "bytes", "diskBytes"), (2, *sizes(segments[:2])),
                                                 strict=True))
    assert doc["freed"]["consumequeue"] == dict(zip(("files", "bytes", "diskBytes"), (2, *sizes(gone_queue)),
                                                    strict=True))
    assert doc["freed"]["index"] == dict(zip(("files", "bytes", "diskBytes"), (71, *sizes(gone_index)), strict=True))
    assert doc["bytesFreed"] == sizes(gone)[0] and doc["minOffset"] == min_offset
    human = run("clean", store, "--config", conf, "--dry-run").stdout.splitlines()
    assert digest(store) == before
    assert human[4:] == [
        "details (--all lists every file):",
        f"  would delete 2 segments (commitlog/{segments[0].name} .. commitlog/{segments[1].name}), 128.0 KiB "
        f"(131072 bytes): modified more than fileReservedTime=72 h ago",
        f"  would delete 2 consume-queue files (consumequeue/T/0/{gone_queue[0].name} .. "
        f"consumequeue/T/0/{gone_queue[1].name}), 7.8 KiB (8000 bytes): every entry points below the commitlog "
        f"minimum {min_offset}",
        f"  would delete 71 index files (index/{gone_index[0].name} .. index/{gone_index[-1].name}), "
        f"{output.size(sizes(gone_index)[0])}: every entry points below the commitlog minimum {min_offset}",
    ]
    every = run("clean", store, "--config", conf, "--dry-run", "--all").stdout.splitlines()
    assert every[:4] == human[:4]
    assert every[4] == "details:"
    assert [ln.split(",")[0] for ln in every[5:]] == [f"  would delete {f.relative_to(store)}" for f in gone]


def small_index_conf(tmp_path: Path) -> Path:
    """fixtures/broker.conf with index files of 15 entries: many index files from few messages."""
    conf = tmp_path / "broker.conf"
    conf.write_text(CONF.read_text().replace("maxIndexNum=256", "maxIndexNum=16").replace(
        "maxHashSlotNum=64", "maxHashSlotNum=4"))
    return conf


def test_a_crash_that_drops_the_open_index_file_says_how_many_keys_only_thorough_brings_back(store):
    """The broker's rule: after a crash, index files newer than the checkpoint's index time go, and the
    re-dispatch puts back only the keys from the recovery start on (the scale run lost 16 M keys so)."""
    import struct

    (store / "abort").touch()
    now = 4_000_000_000_000
    (store / "checkpoint").write_bytes(struct.pack(">qqq", now, now, 0) + bytes(4096 - 24))
    doc = json.loads(run("recover", store, "--config", CONF, "--dry-run", "--json").stdout)
    assert doc["commitlog"]["startSegment"] == LAST_SEGMENT and doc["messagesLost"] == 0
    fewer = doc["indexEntriesDropped"] - doc["indexKeysAdded"]
    assert fewer > 0 and doc["indexKeysFewer"] == fewer
    lines = run("recover", store, "--config", CONF, "--dry-run").stdout.splitlines()
    assert lines[5].endswith(f"re-dispatch would add {doc['indexKeysAdded']} keys ({fewer} fewer: keys of lost "
                             "messages and of messages before the recovery start; `recover --thorough` indexes "
                             "the whole log)")
    thorough = json.loads(run("recover", store, "--config", CONF, "--dry-run", "--thorough", "--json").stdout)
    assert thorough["indexKeysFewer"] == 0 and thorough["indexKeysAdded"] == doc["indexEntriesDropped"]


def test_clean_of_a_store_copied_today_says_a_files_age_is_its_mtime(tmp_path):
    """A copy of old data is "not expired": clean did not say that a file's age is its mtime, not its messages'."""
    store = fixture_copy(tmp_path)
    out = run("clean", store, "--config", CONF, "--dry-run")
    assert out.returncode == 0
    assert out.stdout.splitlines()[0].startswith("nothing to delete: no segment but the newest was modified more "
                                                 "than 72 h ago (a file's age is its mtime, as the broker's: a store "
                                                 "copied today is not expired)")
