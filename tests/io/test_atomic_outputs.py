"""Outputs appear whole or not at all: an export or salvage interrupted (SIGINT, SIGTERM), killed, or
out of disk leaves neither its target nor a temporary (a killed one leaves a temporary the next run
removes), says so in one line, and a complete one is the bytes it always was."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cli_helpers import CONF, FIXTURE, RMQTOOL, RUN_GUARD_S, run

from rmqtool.bench.generate import generate_store
from rmqtool.engine.reader import open_reader
from rmqtool.io import geometry
from rmqtool.io.atomic import atomic_output
from rmqtool.io.schema import MESSAGE_SCHEMA
from rmqtool.ops import export
from rmqtool.ops.log_rows import log_rows
from rmqtool.report import Finding

MESSAGES = 1_000_000  # a few seconds of export: the temporary is seen growing long before the end


@pytest.fixture(scope="module")
def big_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("atomic") / "store"
    generate_store(root, MESSAGES, 100, segment_size=128 << 20)
    return root


def start(*args) -> subprocess.Popen:
    return subprocess.Popen([RMQTOOL, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def temporaries(target: Path) -> list[Path]:
    return sorted(target.parent.glob(f".{target.name}.rmqtool-tmp-*"))


def growing_temporary(proc: subprocess.Popen, target: Path) -> Path:
    """The temporary of `target` once `proc` has been seen making it larger twice (the run is mid-write)."""
    sizes: set[int] = set()
    deadline = time.monotonic() + RUN_GUARD_S
    while proc.poll() is None and time.monotonic() < deadline:
        found = temporaries(target)
        if found:
            with contextlib.suppress(FileNotFoundError):
                sizes.add(found[0].stat().st_size)
            if len(sizes - {0}) >= 2:
                return found[0]
        time.sleep(0.005)
    proc.kill()
    _, err = proc.communicate()
    pytest.fail(f"no temporary of {target} grew while the run lasted (exit {proc.returncode}, sizes {sizes}): {err}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize(("command", "suffix"), [("export", ".parquet"), ("export", ".jsonl"), ("salvage", ".jsonl")])
def test_an_output_interrupted_mid_write_leaves_no_file_and_says_so(big_store, tmp_path, command, suffix, sig):
    target = tmp_path / f"e{suffix}"
    proc = start(command, big_store, "--out", target)
    assert growing_temporary(proc, target).name == f".e{suffix}.rmqtool-tmp-{proc.pid}"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=RUN_GUARD_S)
    assert proc.returncode == 128 + sig
    said = "terminated" if sig == signal.SIGTERM else "interrupted"
    assert err == f"rmqtool: {said}: {command} stopped; nothing was written to {target}\n"
    assert list(tmp_path.iterdir()) == []


def test_a_killed_export_leaves_only_its_temporary_which_the_next_export_of_that_file_removes(big_store, tmp_path):
    target = tmp_path / "e.jsonl"
    proc = start("export", big_store, "--out", target)
    left = growing_temporary(proc, target)
    proc.kill()
    proc.communicate()
    assert list(tmp_path.iterdir()) == [left]
    alive = tmp_path / f".e.jsonl.rmqtool-tmp-{os.getpid()}"  # a run still writing it: not the next run's to remove
    other = tmp_path / f".other.jsonl.rmqtool-tmp-{proc.pid}"  # another target's
    alive.write_bytes(b"")
    other.write_bytes(b"")
    done = run("export", FIXTURE, "--config", CONF, "--out", target)
    assert done.returncode == 0, done.stderr
    assert sorted(tmp_path.iterdir()) == sorted([target, geometry.sidecar(target), alive, other])
    assert len(target.read_text().splitlines()) == 420


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_an_export_that_fills_the_disk_names_the_file_and_leaves_nothing(big_store, small_disk, suffix):
    target = small_disk / f"e{suffix}"
    done = run("export", big_store, "--out", target)
    assert done.returncode == 2
    assert done.stderr == (f"rmqtool: error: export stopped: No space left on device; nothing was written to "
                           f"{target}\n")
    assert list(small_disk.iterdir()) == []


def parquet_bytes(store: Path, conf: Path) -> bytes:
    """The Parquet export as it has always been written: one row group per row batch of the read path, and the
    store's geometry in the key-value metadata."""
    sink = io.BytesIO()
    reader = open_reader(store, conf)
    with pq.ParquetWriter(sink, MESSAGE_SCHEMA, use_dictionary=export._DICTIONARY_COLUMNS) as writer:
        for item in log_rows(reader):
            if not isinstance(item, Finding):
                writer.write_batch(item)
        facts = geometry.of_store(reader.config, "198.51.100.7:10911")
        writer.add_key_value_metadata({geometry.PARQUET_KEY: geometry.encode(facts)})
    return sink.getvalue()


def test_a_complete_export_is_the_target_alone_with_the_bytes_it_always_had(tmp_path):
    stdout = run("export", FIXTURE, "--config", CONF, text=False).stdout
    for args, name in ((["export"], "e.jsonl"), (["salvage"], "s.jsonl"), (["export"], "e.parquet")):
        done = run(*args, FIXTURE, "--config", CONF, "--out", tmp_path / name)
        assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.jsonl", "e.jsonl.geometry.json", "e.parquet", "s.jsonl",
                                                          "s.jsonl.geometry.json"]
    assert (tmp_path / "e.jsonl").read_bytes() == (tmp_path / "s.jsonl").read_bytes() == stdout
    assert len(stdout.splitlines()) == 420
    assert (tmp_path / "e.parquet").read_bytes() == parquet_bytes(FIXTURE, CONF)


def test_forcing_over_an_existing_file_keeps_it_until_the_new_one_is_whole(big_store, tmp_path):
    target = tmp_path / "e.parquet"
    target.write_bytes(b"keep me\n")
    proc = start("export", big_store, "--out", target, "--force")
    growing_temporary(proc, target)
    assert target.read_bytes() == b"keep me\n"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=RUN_GUARD_S)
    assert proc.returncode == 130 and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == [target] and target.read_bytes() == b"keep me\n"
    done = run("export", FIXTURE, "--config", CONF, "--out", target, "--force")
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == [target] and pq.read_metadata(target).num_rows == 420


def test_an_exception_while_writing_removes_the_temporary_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("old")
    with pytest.raises(ZeroDivisionError), atomic_output(target, force=True, what="test") as tmp:
        assert tmp == tmp_path / f".t.txt.rmqtool-tmp-{os.getpid()}"
        tmp.write_text("new")
        1 / 0  # noqa: B018
    assert list(tmp_path.iterdir()) == [target] and target.read_text() == "old"
    with atomic_output(target, force=True, what="test") as tmp:
        tmp.write_text("new")
        assert target.read_text() == "old"
    assert list(tmp_path.iterdir()) == [target] and target.read_text() == "new"
