"""Importing an export into a store that already holds its records: refused by default, skipped and
counted with --skip-existing, never written twice; a folder of export parts reads as one export."""

import hashlib
import json

import pytest
from cli_helpers import CONF, FIXTURE, run


def _tree(root) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "all.jsonl"
    assert run("export", str(FIXTURE), "--out", str(out)).returncode == 0
    return out


def _import(store, source, *extra):
    return run("import", str(store), str(source), "--config", CONF, "--json", *extra)


def test_importing_the_same_export_twice_is_refused_and_changes_nothing(tmp_path, export):
    store = tmp_path / "s"
    assert _import(store, export).returncode == 0
    before = _tree(store)
    out = _import(store, export)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert f"{export}:1: the store already holds this record (commitLogOffset 0, the same record)" in out.stderr
    assert "--skip-existing" in out.stderr
    assert _tree(store) == before


def test_skip_existing_imports_only_the_records_after_the_stores_end(tmp_path, export):
    lines = export.read_text().splitlines(keepends=True)
    head = tmp_path / "head.jsonl"
    head.write_text("".join(lines[:100]))
    whole, part = tmp_path / "whole", tmp_path / "part"
    assert _import(whole, export).returncode == 0
    assert _import(part, head).returncode == 0
    out = _import(part, export, "--skip-existing")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["skippedExisting"] == 100 and doc["messages"] == 320
    assert doc["firstOffset"] == json.loads(lines[100])["commitLogOffset"]
    same = {k: v for k, v in _tree(part).items() if k.startswith(("commitlog", "consumequeue"))}
    assert same == {k: v for k, v in _tree(whole).items() if k.startswith(("commitlog", "consumequeue"))}


def test_a_different_record_at_an_existing_offset_is_refused_even_with_skip_existing(tmp_path, export):
    store = tmp_path / "s"
    assert _import(store, export).returncode == 0
    before = _tree(store)
    lines = export.read_text().splitlines()
    first = json.loads(lines[0])
    first["storeTimestamp"] += 1
    changed = tmp_path / "changed.jsonl"
    changed.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    out = _import(store, changed, "--skip-existing")
    assert out.returncode == 2
    assert f"{changed}:1: commitLogOffset 0: the store holds a different record there" in out.stderr
    assert _tree(store) == before


def test_a_folder_of_export_parts_imports_as_one_export(tmp_path, export):
    lines = export.read_text().splitlines(keepends=True)
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "part-00000.jsonl").write_text("".join(lines[:150]))
    (parts / "part-00001.jsonl").write_text("".join(lines[150:]))
    (parts / "_SUCCESS").write_text("")
    (parts / ".part-00000.jsonl.crc").write_bytes(b"\x00crc")
    from_file, from_folder = tmp_path / "a", tmp_path / "b"
    assert _import(from_file, export).returncode == 0
    out = _import(from_folder, parts)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["messages"] == 420
    data = ("commitlog", "consumequeue")  # index files are named by the time they were made
    assert {k: v for k, v in _tree(from_folder).items() if k.startswith(data)} == \
        {k: v for k, v in _tree(from_file).items() if k.startswith(data)}
