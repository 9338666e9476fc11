"""Only a structure's folder spells its offsets: a layout constant of one structure (an offset, a
length, a field layout or its dtype) used outside its folder is a second copy of the rule waiting to
disagree. Other code imports the structure by name and calls what it offers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import rmqtool

PACKAGE = Path(rmqtool.__file__).parent
STRUCTURES = PACKAGE / "structures"
EXEMPT = ("bench",)  # benchmarks generate raw stores byte by byte on purpose
_LAYOUT_NAME = re.compile(r"^[A-Z][A-Z0-9_]*(_LEN|_AT|_OFFSET|_DTYPE)$")
_NOT_LAYOUT = re.compile(r"^(D_|GEO_|DEFAULT_)")  # column indices of kernel outputs, settings' defaults


def _structure_of(path: Path) -> str | None:
    rel = path.relative_to(PACKAGE).parts
    return rel[1] if len(rel) > 2 and rel[0] == "structures" else None


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layout_constants(path: Path) -> set[str]:
    """Module-level names of `path` that are offsets, lengths, dtypes or `Layout`s."""
    out = set()
    for node in ast.parse(path.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        names += [e.id for t in targets if isinstance(t, ast.Tuple) for e in t.elts if isinstance(e, ast.Name)]
        value = getattr(node, "value", None)
        is_layout = isinstance(value, ast.Call) and "Layout" in ast.unparse(value.func)
        out.update(n for n in names if not _NOT_LAYOUT.match(n) and (_LAYOUT_NAME.match(n) or is_layout))
    return out


def _owners() -> dict[str, tuple[str, set[str]]]:
    """module name -> (structure, its layout constants), for every module of every structure folder."""
    return {_module_name(p): (_structure_of(p), _layout_constants(p))
            for p in STRUCTURES.rglob("*.py") if _structure_of(p)}


def _uses_outside(owners: dict[str, tuple[str, set[str]]]) -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in EXEMPT:
            continue
        mine = _structure_of(path)
        tree = ast.parse(path.read_text())
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if full in owners:
                        aliases[a.asname or a.name] = full
                    elif node.module in owners:
                        owner, names = owners[node.module]
                        if owner != mine and a.name in names:
                            found.append(f"{rel}:{node.lineno} imports {owner}'s {a.name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                owner, names = owners[aliases[node.value.id]]
                if owner != mine and node.attr in names:
                    found.append(f"{rel}:{node.lineno} uses {owner}'s {node.attr}")
    return found


def test_no_structures_layout_constant_is_used_outside_its_folder():
    found = _uses_outside(_owners())
    assert not found, "\n".join(found)


def test_the_scan_finds_a_layout_constant_used_outside(tmp_path, monkeypatch):
    """The check itself can fail: a module outside the structures that reads an index offset."""
    owners = _owners()
    assert "HEADER_LEN" in owners["rmqtool.structures.index"][1]
    assert "ENTRY_LEN" in owners["rmqtool.structures.consumequeue"][1]
    fake = PACKAGE / "ops" / "_layout_probe.py"
    fake.write_text("from rmqtool.structures import index\n\nAT = index.HEADER_LEN\n")
    try:
        assert any("_layout_probe.py:3 uses index's HEADER_LEN" in f for f in _uses_outside(owners))
    finally:
        fake.unlink()
