"""Writes never silently do the wrong thing: no overwritten output, no foreign broker address, no
empty message by omission."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import CONF, FIXTURE, run

from rmqtool.structures.commitlog import msgid
from rmqtool.structures.commitlog.hosts import parse_host


def last_record(store: Path) -> dict:
    out = run("decode", "commitlog", str(store), "--config", CONF, "--jsonl")
    return json.loads(out.stdout.splitlines()[-1])


def test_export_and_salvage_refuse_an_existing_output_file_unless_forced(tmp_path):
    out = tmp_path / "x.jsonl"
    out.write_text("keep me\n")
    for args in (["export", str(FIXTURE), "--out", str(out)], ["salvage", str(FIXTURE), "--out", str(out)]):
        done = run(*args, "--config", CONF)
        assert done.returncode == 2 and f"{out} exists: pass --force" in done.stderr
        assert out.read_text() == "keep me\n"
    assert run("export", str(FIXTURE), "--out", str(out), "--force", "--config", CONF).returncode == 0
    assert len(out.read_text().splitlines()) == 420


def test_append_names_the_broker_the_store_records_name(tmp_path):
    store = tmp_path / "s"
    assert run("append", str(store), "--config", CONF, "--topic", "T", "--body", "a",
               "--store-host", "10.9.8.7:10911").returncode == 0
    out = run("append", str(store), "--config", CONF, "--topic", "T", "--body", "b", "--json")
    doc = json.loads(out.stdout)
    assert last_record(store)["storeHost"] == "10.9.8.7:10911"
    assert doc["msgId"] == msgid.create(parse_host("10.9.8.7:10911"), doc["wroteOffset"])
    assert run("append", str(store), "--config", CONF, "--batch", "-", stdin='{"topic": "T", "bodyText": "c"}\n'
               ).returncode == 0
    assert last_record(store)["storeHost"] == "10.9.8.7:10911"
    assert run("append", str(store), "--config", CONF, "--topic", "T", "--body", "d", "--store-host",
               "10.0.0.1:10911").returncode == 0
    assert last_record(store)["storeHost"] == "10.0.0.1:10911"  # given: it wins


def test_append_without_a_body_is_refused_and_creates_nothing(tmp_path):
    out = run("append", str(tmp_path / "s"), "--config", CONF, "--topic", "T")
    assert out.returncode == 2 and "--body" in out.stderr and out.stderr.count("\n") == 1
    assert not (tmp_path / "s").exists()
    assert run("append", str(tmp_path / "s"), "--config", CONF, "--topic", "T", "--body", "").returncode == 0
    assert last_record(tmp_path / "s")["body"] == ""


def allocated(path: Path) -> int:
    return path.stat().st_blocks * 512


def test_new_files_are_sparse_by_default_and_whole_with_preallocate(tmp_path):
    conf = tmp_path / "b.conf"
    conf.write_text("mappedFileSizeCommitLog=4194304\nmappedFileSizeConsumeQueue=200000\nmaxHashSlotNum=4000\n"
                    "maxIndexNum=16000\n")  # 4 MiB, 195 KiB and 336 KiB files
    for name, extra in (("sparse", []), ("whole", ["--preallocate"])):
        store = tmp_path / name
        assert run("append", str(store), "--config", str(conf), "--topic", "T", "--keys", "k", "--body", "x",
                   *extra).returncode == 0
        files = [p for p in store.rglob("*") if p.is_file() and p.parent.name in ("commitlog", "0", "index")]
        assert {p.parent.name for p in files} == {"commitlog", "0", "index"}
        for p in files:
            if extra:
                assert allocated(p) >= p.stat().st_size, p
            else:
                ahead = (1 << 20) if p.parent.name == "commitlog" else 0  # pages mapped ahead of the writer
                assert allocated(p) <= ahead + 16 * 4096, p  # the pages written, not the file


def test_a_file_system_without_room_for_a_new_file_is_refused_and_nothing_is_half_made(tmp_path, monkeypatch):
    import os

    import pytest

    from rmqtool.engine.config import StoreConfig
    from rmqtool.engine.message_store import MessageStore
    from rmqtool.engine.producer import build_message
    from rmqtool.errors import RmqError
    from rmqtool.files import mappedfile

    cfg = StoreConfig.from_file(CONF)[0]
    store = tmp_path / "s"
    with MessageStore(store, cfg) as st:
        assert st.put_message(build_message("T", b"x")).ok
    before = sorted(str(p.relative_to(store)) for p in store.rglob("*"))
    monkeypatch.setattr(mappedfile, "free_bytes", lambda directory: 1000)
    with pytest.raises(RmqError, match=r"not enough free space for .*0+65536: it needs 65536 bytes, the file "
                                       r"system has 1000"), MessageStore(store, cfg) as st:
        for _ in range(100):  # fills the first 64 KiB segment, then needs a second one
            assert st.put_message(build_message("T", b"y" * 1000)).ok
    assert not any(os.path.basename(p).endswith(".tmp") for p in map(str, store.rglob("*")))
    assert not (store / "commitlog" / f"{65536:020d}").exists()
    assert set(before) <= {str(p.relative_to(store)) for p in store.rglob("*")}
