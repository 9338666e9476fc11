"""Writes never silently do the wrong thing: no overwritten output, no foreign broker address, no
empty message by omission."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rmqtool.format import msgid
from rmqtool.format.hosts import parse_host

RMQTOOL = str(Path(sys.executable).with_name("rmqtool"))
ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "store"
CONF = str(ROOT / "fixtures" / "broker.conf")


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([RMQTOOL, *args], capture_output=True, text=True, timeout=120, input=stdin)


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
