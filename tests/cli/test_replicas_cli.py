"""`rmqtool diff` and `rmqtool hash` as a user runs them: exit 0 identical, 1 different, 2 refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import FIXTURE, run, writable_copy

SEG = 65536


@pytest.fixture(scope="module")
def ha(golden_basic: Path) -> Path:
    return golden_basic.parent / "ha"


def _one_line_error(out, *words: str) -> None:
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("rmqtool: error: "), out.stderr
    for word in words:
        assert word in out.stderr


def test_identical_stores_exit_0(tmp_path):
    out = run("diff", FIXTURE, writable_copy(FIXTURE, tmp_path / "copy"), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["identical"] is True and doc["common"]["firstDifference"] is None


def test_a_flipped_byte_exits_1_naming_it_on_the_screen(tmp_path):
    copy = writable_copy(FIXTURE, tmp_path / "copy")
    seg = copy / "commitlog" / f"{SEG:020d}"
    data = bytearray(seg.read_bytes())
    data[5000] ^= 1
    seg.write_bytes(bytes(data))
    out = run("diff", FIXTURE, copy)
    assert out.returncode == 1, out.stderr
    assert f"first difference at byte {SEG + 5000}" in out.stdout
    assert "different (exit 1)" in out.stdout


def test_sync_master_and_slave_exit_0_with_the_slave_lacking_the_head(ha):
    out = run("diff", ha / "sync" / "master" / "store", ha / "sync" / "slave" / "store")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[196608, 324301)" in out.stdout and "796 expected (fillers)" in out.stdout


def test_different_segment_sizes_are_refused_in_one_line(tmp_path):
    other = tmp_path / "other" / "commitlog"
    other.mkdir(parents=True)
    for start in (0, 2 * SEG):
        (other / f"{start:020d}").write_bytes(bytes(2 * SEG))
    _one_line_error(run("diff", FIXTURE, other.parent), "segment sizes differ", "65536", "131072")


def test_diff_of_one_segment_file_is_refused_in_one_line():
    _one_line_error(run("diff", FIXTURE / "commitlog" / f"{0:020d}", FIXTURE), "give the store root")


def test_hash_json_names_range_bytes_and_algorithm():
    out = run("hash", FIXTURE, "--from", 100, "--upto", SEG + 100, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["from"], doc["upto"], doc["bytes"], doc["algorithm"]) == (100, SEG + 100, SEG, "xxh3_128")
    assert len(doc["digest"]) == 32


def test_hash_past_the_store_end_is_refused_in_one_line(ha):
    _one_line_error(run("hash", ha / "sync" / "slave" / "store", "--upto", 324302), "[196608, 324302)",
                    "holds: [196608, 324301)")


def test_hash_of_master_and_slave_agree_on_the_command_line(ha):
    digests = {json.loads(run("hash", ha / "sync" / side / "store", "--from", 196608, "--upto", 324301,
                              "--json").stdout)["digest"] for side in ("master", "slave")}
    assert len(digests) == 1
