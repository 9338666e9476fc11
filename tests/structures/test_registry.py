"""The registry lists every structure folder once, and its hooks resolve."""

from __future__ import annotations

from pathlib import Path

import rmqtool.structures as structures
from rmqtool.structures import REGISTRY, _hook

FOLDER = Path(structures.__file__).parent


def test_every_structure_folder_is_registered_and_nothing_else():
    folders = {p.name for p in FOLDER.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert folders == {s.name for s in REGISTRY}
    assert len(REGISTRY) == len({s.name for s in REGISTRY})


def test_registry_hooks_resolve_to_callables_and_kind_lists():
    for s in REGISTRY:
        if s.file_rules:
            assert callable(_hook(s.file_rules)), s.name
        if s.refused_at_start:
            kinds = _hook(s.refused_at_start)
            assert kinds and all(isinstance(k, str) for k in kinds), s.name


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
