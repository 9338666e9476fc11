"""The scan on worker threads: windows worked in parallel come out in log order, byte for byte and finding
for finding what one thread gives, a damaged segment in the middle included."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from damage import FIXTURE, SEG, corrupt

from rmqtool.engine.reader import StoreReader
from rmqtool.structures.commitlog import scan
from rmqtool.structures.commitlog.workers import THREADS_VARIABLE, scan_threads

CONF = FIXTURE.parent / "broker.conf"
MIDDLE = f"commitlog/{SEG:020d}"


def _scan(root: Path, threads: str, monkeypatch: pytest.MonkeyPatch, **kw) -> list[tuple]:
    """Every chunk of a scan of `root` with `threads` workers: its records' offsets, columns, topics,
    properties and bodies, and its findings, in the order the scan gives them."""
    monkeypatch.setenv(THREADS_VARIABLE, threads)
    chunks = []
    for chunk in StoreReader(root, CONF).scan(**kw):
        batch = chunk.batch
        records = None
        if batch is not None:
            records = (batch.offsets.tolist(), {k: v.tolist() for k, v in batch.cols.items()}, batch.topic_names(),
                       batch.properties_array().to_pylist(), batch.bodies(), batch.body_crcs().tolist())
        chunks.append((records, [(f.file, f.offset, f.reason, f.bytes, f.kind) for f in chunk.findings]))
    return chunks


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """4 KiB windows: each 64 KiB segment of the fixture store is walked in 16 windows."""
    monkeypatch.setattr(scan, "WINDOW_BYTES", 4096)


def test_damaged_middle_segment_scans_the_same_on_one_and_two_threads(tmp_path, monkeypatch, small_windows):
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    corrupt(root, MIDDLE, "flip", 5300)  # a body bit: the record's CRC no longer matches
    # junk from the first record of a window (89115) over two windows: that window hands out no record
    corrupt(root, MIDDLE, "garbage", 89115 - SEG, 9000)
    one, two = _scan(root, "1", monkeypatch), _scan(root, "2", monkeypatch)
    assert two == one
    path = str(root / MIDDLE)
    found = [(records[0][0] if records else None, f) for records, fs in two for f in fs]
    assert found == [
        (69820, (path, 70747, "body CRC mismatch: stored 569080402, computed 253607577", 172, "crc-mismatch")),
        (98228, (path, 89115, "bad magic code 0x6E6B5AA5; skipped to the next record", 9113, "corrupt-region")),
    ]  # each with the batch of its window; the region's with the first batch after it
    offsets = [o for records, _ in two if records for o in records[0]]
    assert offsets == sorted(offsets) and len(offsets) == len(set(offsets))
    assert not any(o == 70747 or 89115 <= o < 98228 for o in offsets)
    assert len([records for records, _ in two if records]) > 3 * 4  # many windows a segment, all handed out


def test_crc_findings_follow_their_window_in_log_order_on_two_threads(tmp_path, monkeypatch, small_windows):
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    monkeypatch.setenv(THREADS_VARIABLE, "1")
    batches = [c.batch for c in StoreReader(root, CONF).scan() if c.batch is not None]
    flipped = [(b.base, int(b.pos[0]), int(b.body_pos[0])) for b in batches[1::4]]  # the first body of every 4th
    for base, _, body in flipped:
        corrupt(root, f"commitlog/{base:020d}", "flip", body)
    one, two = _scan(root, "1", monkeypatch), _scan(root, "2", monkeypatch)
    assert two == one
    found = [(records[0][0] if records else None, f[1], f[4]) for records, fs in two for f in fs]
    # the damaged record was its window's first: the finding rides with the rest of that window
    assert found == [(base + pos + total, base + pos, "crc-mismatch") for (base, pos, _), total in
                     zip(flipped, [int(b.cols["totalSize"][0]) for b in batches[1::4]], strict=True)]
    assert len(found) > 3


def test_scan_without_crc_and_from_an_offset_is_the_same_on_two_threads(tmp_path, monkeypatch, small_windows):
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    corrupt(root, MIDDLE, "garbage", 20000, 500)
    kw = {"from_offset": SEG + 10000, "verify_crc": False, "until": 2 * SEG + 20000}
    one, two = _scan(root, "1", monkeypatch, **kw), _scan(root, "2", monkeypatch, **kw)
    assert two == one
    offsets = [o for records, _ in two if records for o in records[0]]
    assert offsets[0] >= SEG + 10000 and offsets[-1] < 2 * SEG + 20000


def test_consumer_that_stops_early_leaves_no_window_in_work(tmp_path, monkeypatch, small_windows):
    monkeypatch.setenv(THREADS_VARIABLE, "2")
    chunks = StoreReader(FIXTURE, CONF).scan()
    first = next(c for c in chunks if c.batch is not None)
    chunks.close()  # the segment's map closes with windows handed to the workers
    assert int(first.batch.offsets[0]) == 0 and np.all(np.diff(first.batch.offsets) > 0)


@pytest.mark.parametrize(("value", "threads"), [("1", 1), ("3", 3), ("0", None), ("many", None), ("", None)])
def test_scan_threads_setting_falls_back_to_one_per_core_when_not_a_positive_number(monkeypatch, value, threads):
    monkeypatch.setenv(THREADS_VARIABLE, value)
    assert scan_threads() == (threads or max(os.cpu_count() or 1, 1))


@pytest.mark.parametrize("distinct", [1, 2, 7, 64, 65, 300])
def test_topics_grouped_in_one_pass_equal_the_hash_grouping(distinct):
    rng = np.random.default_rng(distinct)
    words = [f"Topic-{i}-{'x' * int(rng.integers(0, 20))}".encode() for i in range(distinct)]
    picks = rng.integers(0, distinct, 5000)
    picks[:distinct] = np.arange(distinct)  # every word appears
    buf = b"".join(words[i] for i in picks)
    lengths = np.array([len(words[i]) for i in picks], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    ids, names = scan.group_strings(buf, starts, lengths)
    want_ids, want_names = scan._hashed_strings(buf, starts, lengths)
    assert names == want_names and ids.tolist() == want_ids.tolist()
    assert [names[i].encode() for i in ids.tolist()] == [words[i] for i in picks]


def test_properties_with_zero_or_non_ascii_bytes_are_kept_and_bad_utf8_replaced():
    props = [b"TAGS\x01a\x02", b"KEYS\x01\xce\xb2\x02", b"", b"A\x01\x00\x02", b"B\x01\xff\x02"]
    buf = b"".join(props)
    lengths = np.array([len(p) for p in props], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    batch = scan.RecordBatch("", 0, buf, starts, scan.Columns(np.zeros(len(props), dtype=scan._V4_DTYPE)), starts,
                             starts, lengths, starts, lengths)
    want = ["TAGS\x01a\x02", "KEYS\x01β\x02", "", "A\x01\x00\x02", "B\x01\ufffd\x02"]
    assert batch.properties_array().to_pylist() == want
    assert batch.select(np.array([True, False, True, False, False])).properties_array().to_pylist() == [want[0], ""]
