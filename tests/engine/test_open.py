"""One open: every command reads the store's geometry from its files, checks a given config against
them, and refuses values the broker could not run with before a file is made."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import run
from typer.testing import CliRunner

from rmqtool.cli.app import app
from rmqtool.engine import kind
from rmqtool.engine.opening import open_store


def _writable_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def _ordinary(expected: dict, topic: str, queue_id: int) -> list[dict]:
    msgs = [m for m in expected["messages"] if m["topic"] == topic and m["queueId"] == queue_id and m["inConsumeQueue"]]
    return sorted(msgs, key=lambda m: m["queueOffset"])


def test_query_without_config_reads_queue_files_of_their_own_size(golden_basic, golden_expected):
    """The broker wrote 4000-byte queue files; with no broker.conf a query took the default size and
    answered offsets 200.. of OrderTopic/0 as missing."""
    msgs = _ordinary(golden_expected, "OrderTopic", 0)
    want = msgs[250]
    assert want["queueOffset"] == 250  # in the queue's second file
    p = run("query", golden_basic / "store", "--topic", "OrderTopic", "--queue", "0", "--queue-offset", "250",
            "--json")
    assert p.returncode == 0, p.stderr
    (hit,) = json.loads(p.stdout)["messages"]
    assert (hit["commitLogOffset"], hit["queueOffset"], hit["msgId"]) == \
        (want["commitLogOffset"], 250, want["msgId"])


def test_query_by_time_without_config_answers_instead_of_a_traceback(golden_basic, golden_expected):
    msgs = _ordinary(golden_expected, "OrderTopic", 0)
    t = msgs[210]["storeTimestamp"]
    first = next(m for m in msgs if m["storeTimestamp"] >= t)
    p = run("query", golden_basic / "store", "--topic", "OrderTopic", "--queue", "0", "--time", str(t), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["queueOffset"] == first["queueOffset"]


def test_append_import_and_recover_without_config_use_the_stores_segment_size(golden_basic, golden_expected,
                                                                                 tmp_path):
    """64 KiB segments and no --config: the writers took 1 GiB and refused ('start offset is not a multiple
    of the file size'), and recover named a config nobody gave."""
    store = _writable_copy(golden_basic / "store", tmp_path / "store")
    end = golden_expected["maxPhyOffset"]
    p = run("append", store, "--topic", "OrderTopic", "--body", "hi", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["wroteOffset"] == end
    assert open_store(store).config.mappedFileSizeCommitLog == 65536
    assert sorted(f.stat().st_size for f in (store / "commitlog").iterdir())[0] == 65536
    p = run("recover", store, "--dry-run", "--json")
    assert p.returncode == 0, p.stderr
    assert "1073741824" not in p.stdout + p.stderr
    full = tmp_path / "full.jsonl"
    assert run("export", golden_basic / "store", "--out", full).returncode == 0
    export = tmp_path / "e.jsonl"  # the log's first 200 records: a prefix imports at its own offsets
    export.write_text("".join(full.read_text().splitlines(keepends=True)[:200]))
    copy = tmp_path / "copy"
    p = run("import", copy, export, "--config", golden_basic / "broker.conf")
    assert p.returncode == 0, p.stderr
    p = run("import", copy, export, "--skip-existing", "--json")  # the store's own sizes, no --config
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("setting", ["maxHashSlotNum=0", "mappedFileSizeConsumeQueue=0", "maxIndexNum=0",
                                     "maxIndexNum=1", "mappedFileSizeCommitLog=64", "mappedFileSizeCommitLog=-1",
                                     "mappedFileSizeConsumeQueue=30", "maxMessageSize=0"])
def test_zero_size_config_is_refused_before_anything_is_created(tmp_path, setting):
    conf = tmp_path / "broker.conf"
    conf.write_text(setting + "\n")
    store = tmp_path / "new"
    p = run("append", store, "--config", conf, "--topic", "T", "--body", "x")
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert setting.split("=")[0] in p.stderr
    assert not store.exists()


def test_clean_refuses_a_config_the_files_contradict(golden_basic, tmp_path):
    store = _writable_copy(golden_basic / "store", tmp_path / "store")
    conf = tmp_path / "broker.conf"
    conf.write_text("mappedFileSizeCommitLog=131072\n")
    before = sorted(p.name for p in (store / "commitlog").iterdir())
    p = run("clean", store, "--config", conf, "--reserved-hours", "0")
    assert p.returncode == 2
    assert "mappedFileSizeCommitLog=131072" in p.stderr and "65536" in p.stderr
    assert sorted(p.name for p in (store / "commitlog").iterdir()) == before


@pytest.mark.parametrize("argv", [
    ["recover", "{store}"], ["recover", "{store}", "--dry-run"], ["append", "{store}", "--topic", "T", "--body", "x"],
    ["verify", "{store}"], ["info", "{store}"], ["clean", "{store}", "--dry-run"],
    ["query", "{store}", "--phy-offset", "0"], ["decode", "commitlog", "{store}", "--count", "1"],
    ["export", "{store}", "--out", "{store}/../e.jsonl"], ["salvage", "{store}", "--out", "{store}/../s.jsonl"],
])
def test_store_kind_is_detected_once_per_command(golden_basic, tmp_path, monkeypatch, argv):
    """recover detected the kind five times, each decoding up to 64 KiB of two segments: a command that
    writes (or shows it) detects it once, a read-only one at most once."""
    store = _writable_copy(golden_basic / "store", tmp_path / "store")
    calls = []
    real = kind.detect

    def counting(paths):
        calls.append(paths.root)
        return real(paths)

    monkeypatch.setattr(kind, "detect", counting)
    result = CliRunner().invoke(app, [a.format(store=store) for a in argv])
    assert result.exit_code in (0, 1), result.output
    writes = argv[0] in ("recover", "append", "clean", "info")  # these must know it; a lookup need not
    assert len(calls) == (1 if writes else len(calls)) and len(calls) <= 1


def test_a_lone_cut_index_file_is_damage_not_a_contradicting_config(golden_basic, tmp_path):
    """With one index file left and cut short, --config was refused as contradicting the files."""
    store = _writable_copy(golden_basic / "store", tmp_path / "store")
    files = sorted((store / "index").iterdir())
    for f in files[:-1]:
        f.unlink()
    last = files[-1]
    last.write_bytes(last.read_bytes()[:1000])
    p = run("verify", store, "--config", golden_basic / "broker.conf", "--json")
    assert p.returncode == 1, p.stderr
    kinds = json.dumps(json.loads(p.stdout))
    assert "index-file-size" in kinds
    assert open_store(store, golden_basic / "broker.conf").config.maxIndexNum == 256
