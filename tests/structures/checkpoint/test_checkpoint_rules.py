"""A checkpoint too short for its three longs: every reader and writer refuses it in one line, and no writer
changes a byte of the store."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import CONF, fixture_copy, run
from damage import corrupt

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.staging import read_end
from rmqtool.errors import RmqError
from rmqtool.files.paths import StorePaths
from rmqtool.structures import checkpoint

SHORT = "10 bytes is too small for a checkpoint (24 bytes at least)"


@pytest.fixture
def short_store(tmp_path: Path) -> Path:
    store = fixture_copy(tmp_path)
    corrupt(store, "checkpoint", "truncate", 10)
    return store


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_min_len_is_the_three_longs_of_the_layout():
    assert checkpoint.MIN_LEN == 24
    assert checkpoint.refusal(bytes(24)) is None
    assert checkpoint.refusal(bytes(23)) == "23 bytes is too small for a checkpoint (24 bytes at least)"


def test_append_on_short_checkpoint_is_one_line_exit_2(short_store):
    before = snapshot(short_store)
    out = run("append", short_store, "--config", CONF, "--topic", "T", "--body", "x")
    assert out.returncode == 2
    assert out.stderr.splitlines() == [f"rmqtool: error: {short_store / 'checkpoint'}: {SHORT}"]
    assert "Traceback" not in out.stderr and out.stdout == ""
    assert snapshot(short_store) == before


@pytest.mark.parametrize(("command", "options"), [(("info",), ("--config", CONF)), (("decode", "checkpoint"), ())],
                         ids=["info", "decode"])
def test_reader_on_short_checkpoint_says_the_minimum_in_one_line(short_store, command, options):
    out = run(*command, short_store, *options)
    assert out.returncode == 2
    assert len(out.stderr.splitlines()) == 1 and str(short_store / "checkpoint") in out.stderr
    assert SHORT in out.stderr and "Traceback" not in out.stderr


def test_load_end_of_short_checkpoint_is_one_line_error(short_store):
    with pytest.raises(RmqError, match=r"checkpoint: 10 bytes is too small for a checkpoint \(24 bytes at least\)$"):
        read_end(StorePaths(short_store), StoreConfig.from_file(CONF)[0])
