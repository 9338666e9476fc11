"""Every registered structure that keeps files is an object with behaviour: it recognises its files, places a
path in a store and checks its files. Before, `dledger`, `timerlog` and `config` were bare names in the registry:
`verify` said nothing of a broken config/topics.json or a damaged timer log unit, and `info`'s timer section was
written in ops/info.py."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import FIXTURE, fixture_copy, run
from stores5x import make_timer_store

from rmqtool.engine.reader import StoreReader
from rmqtool.files.paths import offset_name
from rmqtool.ops.verify import verify_store
from rmqtool.structures import timerlog
from rmqtool.structures.registry import REGISTRY, structure
from rmqtool.structures.structure import Structure


def test_no_structure_that_keeps_files_is_a_bare_name():
    bare = [s.name for s in REGISTRY if s.folder and (type(s) is Structure
                                                       or type(s).recognise is Structure.recognise
                                                       or type(s).place is Structure.place)]
    assert bare == []


def _kinds(store: Path, name: str) -> list[tuple[str, str, str]]:
    return [(Path(f.file).name, f.kind, f.severity) for f in verify_store(StoreReader(store)).findings
            if f.structure == name]


def test_a_config_file_the_broker_cannot_load_is_a_verify_finding(tmp_path):
    store = fixture_copy(tmp_path)
    config = store / "config"
    config.mkdir()
    (config / "topics.json").write_text('{"topicConfigTable":{')  # cut by a full disk, no .bak
    (config / "consumerOffset.json").write_text("{")
    (config / "consumerOffset.json.bak").write_text('{"offsetTable":{}}')
    (config / "delayOffset.json").write_text('{"offsetTable":{}}')
    (config / "delayOffset.json.tmp").write_text("{")
    assert sorted(_kinds(store, "config")) == [
        ("consumerOffset.json", "config-from-bak", "warning"),
        ("delayOffset.json.tmp", "config-tmp-left", "warning"),
        ("topics.json", "config-unreadable", "error")]
    out = run("verify", store, "--json")
    assert out.returncode == 1 and json.loads(out.stdout)["problems"] == 1


def test_a_damaged_timer_log_unit_is_a_verify_finding(tmp_path):
    store = tmp_path / "timer"
    make_timer_store(FIXTURE, store, [(0, 239, 1_700_000_000_000, 5000), (239, 176, 1_700_000_000_001, 1)])
    assert _kinds(store, "timerlog") == []
    seg = store / "timerlog" / offset_name(0)
    raw = bytearray(seg.read_bytes())
    raw[timerlog.UNIT_LEN + timerlog.UNIT.offset("magic") + 3] = 0x40
    seg.write_bytes(bytes(raw))
    assert _kinds(store, "timerlog") == [(seg.name, "bad-unit", "error")]


def test_timer_log_dledger_and_config_files_are_recognised_and_placed(tmp_path):
    store = tmp_path / "timer"
    make_timer_store(FIXTURE, store, [(0, 239, 1_700_000_000_000, 5000)])
    seg = store / "timerlog" / offset_name(0)
    timer, dledger, config = structure("timerlog"), structure("dledger"), structure("config")
    assert timer.recognise(seg.read_bytes()[:64], seg.stat().st_size) is None
    assert timer.place(seg) == store
    assert timer.recognise(bytes(64), 64) == "its first bytes are neither a timer unit nor a blank"
    entry = (1).to_bytes(4, "big") + (300).to_bytes(4, "big") + bytes(56)
    assert dledger.recognise(entry, 1 << 20) is None
    assert dledger.recognise(bytes(64), 1 << 20) is not None
    assert dledger.place(store / "dledger-n0" / "data" / offset_name(0)) == store
    assert config.place(store / "config" / "topics.json") == store
    assert config.recognise(b'{"topicConfigTable":{}}', 23) is None
    assert config.recognise(b"\0\0\0\0", 4) == "not a JSON object"
    epoch = structure("epoch")
    assert epoch.recognise(b"1\n0\n1-0\n", 8) is None and epoch.recognise(b"\x01\x02", 2) is not None
    assert epoch.place(store / "epochFileCheckpoint.bak") == store and epoch.place(seg) is None


def test_info_of_a_timer_store_lists_its_files_from_the_timer_log_structure(tmp_path):
    store = tmp_path / "timer"
    make_timer_store(FIXTURE, store, [(0, 239, 1_700_000_000_000, 5000)])
    doc = json.loads(run("info", store, "--json").stdout)
    assert doc["timerFiles"] == {"timerwheel": {"bytes": 512}, "timerlog": {"segments": 1, "bytes": 172},
                                 "timercheck": {"bytes": 32}}
