"""`diff` only orchestrates: each structure's replica comparison lives in its folder (`structures/<name>/
compare.py`, asked through `Structure.compare`), and `ops/diff.py` opens both stores, asks every registered
structure and assembles the answers. Before, the commitlog's, the queues' and the index's rules for two
replicas (and the epochs' consistent point) were all written in `ops/diff.py`."""

from __future__ import annotations

import ast
from pathlib import Path

from cli_helpers import FIXTURE

import rmqtool.ops.diff
from rmqtool.structures.registry import REGISTRY
from rmqtool.structures.structure import Structure

DIFF = Path(rmqtool.ops.diff.__file__)
SHARED = ("rmqtool.structures.replicas", "rmqtool.structures.structure")  # the types a comparison answers in
REGISTRY_MODULES = ("rmqtool.structures", "rmqtool.structures.registry")
COMPARED = ("commitlog", "consumequeue", "index", "epoch")  # the structures whose sections `diff` shows


def structure_imports(path: Path) -> list[str]:
    """`module.name` of each structure name `path` imports that is neither the registry nor a shared type, and
    numpy (the comparisons' work) wherever it is imported."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("rmqtool.structures") or a.name == "numpy"]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "numpy" or node.module in REGISTRY_MODULES:
                found += [f"{node.module}.{a.name}" for a in node.names if a.name != "REGISTRY"]
            elif node.module.startswith("rmqtool.structures") and node.module not in SHARED:
                found += [f"{node.module}.{a.name}" for a in node.names]
    return found


def test_replica_comparison_per_structure_does_not_live_in_ops_diff():
    assert structure_imports(DIFF) == []


def test_the_check_sees_a_structure_rule_imported_into_diff(tmp_path):
    src = tmp_path / "diff.py"
    src.write_text("import numpy as np\nfrom rmqtool.structures import REGISTRY, consumequeue\n"
                   "from rmqtool.structures.commitlog.geometry import segment_size_of\n"
                   "from rmqtool.structures.replicas import Pair\n")
    assert structure_imports(src) == ["numpy", "rmqtool.structures.consumequeue",
                                      "rmqtool.structures.commitlog.geometry.segment_size_of"]


def test_every_structure_diff_shows_answers_compare_from_its_folder():
    base = getattr(Structure, "compare", None)
    answering = {s.name for s in REGISTRY if getattr(type(s), "compare", None) is not base}
    assert answering == set(COMPARED)
    for name in COMPARED:
        assert (DIFF.parent.parent / "structures" / name / "compare.py").is_file()


def test_a_registered_structure_s_answer_is_a_section_of_the_document_and_its_disagreement_the_result(monkeypatch):
    from rmqtool.structures.replicas import Comparison, Pair

    class Witness(Structure):
        name = "witness"

        def compare(self, pair: Pair) -> Comparison | None:
            return Comparison({"witness": {"held": [pair.held_a.end, pair.held_b.end]}}, agree=False)

    monkeypatch.setattr(rmqtool.ops.diff, "REGISTRY", (*REGISTRY, Witness()))
    doc = rmqtool.ops.diff.diff_stores(FIXTURE, FIXTURE)
    assert list(doc)[-2:] == ["witness", "identical"]
    assert doc["witness"] == {"held": [doc["a"]["upto"], doc["b"]["upto"]]}
    assert doc["common"]["identical"] is True and doc["identical"] is False
