"""The registry lists every structure folder once, by its object, and places files by the owners' rules."""

from __future__ import annotations

from pathlib import Path

import rmqtool.structures as structures
from rmqtool.structures import dledger
from rmqtool.structures.registry import FILE_OWNERS, REGISTRY, file_owner, place_in_store
from rmqtool.structures.structure import Structure

FOLDER = Path(structures.__file__).parent


def test_every_structure_folder_is_registered_and_nothing_else():
    folders = {p.name for p in FOLDER.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert folders == {s.name for s in REGISTRY}
    assert len(REGISTRY) == len({s.name for s in REGISTRY})


def test_each_folder_exports_its_own_structure_object():
    for s in REGISTRY:
        assert isinstance(s, Structure), s.name
        assert type(s).__module__ in (f"rmqtool.structures.{s.name}.structure", "rmqtool.structures.structure")
    assert [s.name for s in FILE_OWNERS] == ["commitlog", "consumequeue", "index", "checkpoint"]
    for s in REGISTRY:
        assert all(isinstance(k, str) for k in s.refused_at_start), s.name
    assert "segment-size" in REGISTRY[0].refused_at_start


def test_a_queue_file_of_a_topic_named_like_a_folder_is_placed_as_a_queue_file(tmp_path):
    placed = place_in_store(tmp_path / "consumequeue" / "index" / "0" / f"{0:020d}")
    assert placed is not None and placed[0].name == "consumequeue" and placed[1] == tmp_path
    placed = place_in_store(tmp_path / "index" / "20231114221320001")
    assert placed is not None and placed[0].name == "index" and placed[1] == tmp_path
    assert place_in_store(tmp_path / "elsewhere" / "file") is None


def test_a_dledger_data_file_is_a_commitlog_segment_to_the_registry():
    """The commitlog takes the head of its other implementation's segment, which it knows only through the
    registry (the commitlog folder imports nothing of dledger)."""
    segment = file_owner("commitlog segment")
    entry = dledger.ENTRY.codec.pack(dledger.ENTRY_MAGIC, 100, 0, 1, 0, 0, 0, 0, 100 - dledger.BODY_OFFSET)
    assert segment.recognise(entry, 4096) is None
    assert segment.recognise(dledger.BLANK_MAGIC.to_bytes(4, "big", signed=True) + (60).to_bytes(4, "big"), 64) \
        is None
    assert segment.recognise(b"\x00\x00\x00\x07\x00\x00\x00\x09", 8) is not None


def test_verify_reports_what_each_structures_file_rules_find(tmp_path):
    """verify's findings include each registered structure's own file findings (the loop is the registry's)."""
    from cli_helpers import CONF, fixture_copy

    from rmqtool.engine.reader import StoreReader
    from rmqtool.ops.verify import verify_store

    store = fixture_copy(tmp_path)
    seg = sorted((store / "commitlog").iterdir())[0]
    with open(seg, "r+b") as f:
        f.truncate(seg.stat().st_size - 4096)
    queue_file = sorted((store / "consumequeue").rglob("0000*"))[0]
    queue_file.write_bytes(queue_file.read_bytes() + b"\0" * 7)
    reader = StoreReader(store, CONF)
    kinds = {(f.structure, f.kind) for f in verify_store(reader).findings}
    assert ("commitlog", "segment-size") in kinds
    assert ("consumequeue", "queue-file-size") in kinds
