"""`hash STORE --from --upto`: one digest of a commitlog range, equal on both replicas of a range they share and
different past it (golden/ha's real master/slave pairs, opened read-only), whatever the segment files."""

from __future__ import annotations

from pathlib import Path

import pytest
import xxhash
from cli_helpers import FIXTURE, writable_copy

from rmqtool.errors import RmqError
from rmqtool.ops import hashing
from rmqtool.ops.hashing import hash_store

SEG = 65536
FIXTURE_END = 151686


@pytest.fixture(scope="module")
def ha(golden_basic: Path) -> Path:
    return golden_basic.parent / "ha"


def _store(ha: Path, scenario: str, side: str) -> Path:
    return ha / scenario / side / "store"


def _bytes(root: Path, lo: int, hi: int) -> bytes:
    """The log's bytes [lo, hi), read file by file without rmqtool."""
    out = b""
    for path in sorted((root / "commitlog").iterdir()):
        start = int(path.name)
        data = path.read_bytes()
        out += data[max(lo - start, 0) : max(min(hi - start, len(data)), 0)]
    return out


def test_digest_is_xxh3_128_of_the_range_bytes_across_segment_files(monkeypatch):
    monkeypatch.setattr(hashing, "CHUNK", 4096)  # many chunks per segment: still one stream
    lo, hi = SEG - 1000, 2 * SEG + 777  # across two file boundaries
    got = hash_store(FIXTURE, lo, hi)
    assert got.digest == xxhash.xxh3_128(_bytes(FIXTURE, lo, hi)).hexdigest()
    assert got.to_json() == {"store": str(FIXTURE), "from": lo, "upto": hi, "bytes": hi - lo, "algorithm": "xxh3_128",
                             "digest": got.digest, "holds": {"from": 0, "upto": FIXTURE_END}}


def test_default_range_is_all_the_store_holds():
    got = hash_store(FIXTURE)
    assert (got.start, got.end) == (0, FIXTURE_END)
    assert got.digest == xxhash.xxh3_128(_bytes(FIXTURE, 0, FIXTURE_END)).hexdigest()


@pytest.mark.parametrize(("a", "b", "lo", "hi"), [
    (("sync", "master"), ("sync", "slave"), 196608, 324301),
    (("resume", "master"), ("resume", "slave"), 196608, 391118),
    (("resume", "master"), ("sync", "master"), 0, 324301),  # the resumed master kept the sync master's log
    (("ahead", "master"), ("ahead", "slave"), 196608, 249824),  # up to where the master took new records
])
def test_master_and_slave_digests_agree_over_a_range_both_hold(ha, a, b, lo, hi):
    da, db = hash_store(_store(ha, *a), lo, hi), hash_store(_store(ha, *b), lo, hi)
    assert da.digest == db.digest
    assert da.end - da.start == hi - lo


@pytest.mark.parametrize(("lo", "hi"), [
    (196608, 252580),  # the range both hold: past 249824 the master's new records and the slave's differ
    (249826, 249827),  # the first differing byte alone (the records' totalSize: 0x000000DA vs 0x00000100)
])
def test_digests_differ_past_the_identical_range(ha, lo, hi):
    master, slave = _store(ha, "ahead", "master"), _store(ha, "ahead", "slave")
    assert hash_store(master, lo, hi).digest != hash_store(slave, lo, hi).digest


def test_range_outside_what_the_store_holds_is_refused_naming_it(ha):
    slave = _store(ha, "sync", "slave")
    with pytest.raises(RmqError, match=r"^\[0, 324301\) is outside what .*sync/slave/store holds: \[196608, 324301\)$"):
        hash_store(slave, 0, 324301)
    with pytest.raises(RmqError, match=r"\[196608, 391118\) is outside .* holds: \[196608, 324301\)"):
        hash_store(slave, None, 391118)


def test_from_past_upto_is_refused():
    with pytest.raises(RmqError, match="--from 5000 is past --upto 4000"):
        hash_store(FIXTURE, 5000, 4000)
    with pytest.raises(RmqError, match=rf"\[{FIXTURE_END + 1}, {FIXTURE_END}\) is outside what .* holds"):
        hash_store(FIXTURE, FIXTURE_END + 1)  # --from past the end, --upto the default


def test_a_missing_segment_inside_the_range_is_refused(tmp_path):
    store = writable_copy(FIXTURE, tmp_path / "store")
    (store / "commitlog" / f"{SEG:020d}").unlink()
    with pytest.raises(RmqError, match=f"holds offset {SEG} "):
        hash_store(store, 0, 2 * SEG + 10)


def test_log_ending_in_a_blank_marker_holds_its_segment_to_the_end(tmp_path):
    store = writable_copy(FIXTURE, tmp_path / "store")
    last = store / "commitlog" / f"{2 * SEG:020d}"
    last.write_bytes(bytes(SEG))  # the newest segment just created, nothing in it: the one before ends in a blank
    got = hash_store(store)
    assert (got.holds.start, got.holds.end) == (0, 2 * SEG)
    assert got.digest == xxhash.xxh3_128(_bytes(FIXTURE, 0, 2 * SEG)).hexdigest()
