"""Only a structure's folder spells its offsets: a layout constant of one structure (an offset, a
length, a field layout or its dtype, a column index of a compiled kernel's output, a stop code, or a
name its module serves through `__getattr__`) used outside its folder is a second copy of the rule
waiting to disagree. Other code imports the structure by name and calls what it offers (the walker's
rows and stops by name)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import rmqtool

PACKAGE = Path(rmqtool.__file__).parent
STRUCTURES = PACKAGE / "structures"
EXEMPT = ("bench",)  # benchmarks generate raw stores byte by byte on purpose
_LAYOUT_NAME = re.compile(r"^[A-Z][A-Z0-9_]*(_LEN|_AT|_OFFSET|_DTYPE)$")
_KERNEL_CODE = re.compile(r"^(D|GEO|STOP|POLICY|END)_[A-Z0-9_]+$")  # kernel output columns, walk policies and stops
_NOT_LAYOUT = re.compile(r"^DEFAULT_")  # settings' defaults


def _structure_of(path: Path) -> str | None:
    rel = path.relative_to(PACKAGE).parts
    return rel[1] if len(rel) > 2 and rel[0] == "structures" else None


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _served(node: ast.AST) -> set[str]:
    """The names a module-level `__getattr__` answers (the strings its comparisons test `name` against)."""
    if not isinstance(node, ast.FunctionDef) or node.name != "__getattr__":
        return set()
    return {c.value for cmp in ast.walk(node) if isinstance(cmp, ast.Compare) for c in ast.walk(cmp)
            if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.isidentifier()}


def _layout_constants(path: Path) -> set[str]:
    """Module-level names of `path` that are offsets, lengths, dtypes, `Layout`s, kernel columns and stop codes,
    or that its `__getattr__` serves."""
    out = set()
    for node in ast.parse(path.read_text()).body:
        out |= _served(node)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        names += [e.id for t in targets if isinstance(t, ast.Tuple) for e in t.elts if isinstance(e, ast.Name)]
        value = getattr(node, "value", None)
        is_layout = isinstance(value, ast.Call) and "Layout" in ast.unparse(value.func)
        out.update(n for n in names if not _NOT_LAYOUT.match(n) and (_LAYOUT_NAME.match(n) or _KERNEL_CODE.match(n)
                                                                       or is_layout))
    return out


def _owners() -> dict[str, tuple[str, set[str]]]:
    """module name -> (structure, its layout constants), for every module of every structure folder."""
    return {_module_name(p): (_structure_of(p), _layout_constants(p))
            for p in STRUCTURES.rglob("*.py") if _structure_of(p)}


def _package_sources() -> Iterator[tuple[Path, str]]:
    """(path inside the package, text) of every module the check covers."""
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] not in EXEMPT:
            yield rel, path.read_text()


def _uses_outside(owners: dict[str, tuple[str, set[str]]], sources: Iterable[tuple[Path, str]]) -> list[str]:
    """Each use, in `sources` ((path inside the package, text) pairs), of a structure's layout name outside it."""
    found = []
    for rel, text in sources:
        mine = _structure_of(PACKAGE / rel)
        tree = ast.parse(text)
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
    found = _uses_outside(_owners(), _package_sources())
    assert not found, "\n".join(found)


def _probe(text: str) -> list[str]:
    """What the check says of one module outside the structures (never written into the package)."""
    return _uses_outside(_owners(), [(Path("ops") / "_layout_probe.py", text)])


def test_the_scan_finds_a_layout_constant_used_outside():
    """The check itself can fail: a module outside the structures that reads an index offset."""
    owners = _owners()
    assert "HEADER_LEN" in owners["rmqtool.structures.index"][1]
    assert "ENTRY_LEN" in owners["rmqtool.structures.consumequeue"][1]
    assert _probe("from rmqtool.structures import index\n\nAT = index.HEADER_LEN\n") == [
        "ops/_layout_probe.py:3 uses index's HEADER_LEN"]


def test_the_scan_finds_a_walker_column_or_stop_code_used_outside():
    owners = _owners()
    assert {"GEO_START", "STOP_BLANK", "POLICY_BROKER"} <= owners["rmqtool.structures.commitlog.kernels"][1]
    assert {"D_OFFSET", "D_IN_CQ"} <= owners["rmqtool.structures.consumequeue.dispatchkernel"][1]
    assert "END_ZEROS" in owners["rmqtool.structures.commitlog.scan"][1]
    found = _probe("from rmqtool.structures.commitlog import kernels\n"
                   "from rmqtool.structures.consumequeue.dispatchkernel import D_OFFSET\n\n"
                   "START = kernels.GEO_START\nBLANK = kernels.STOP_BLANK\n")
    assert found == ["ops/_layout_probe.py:2 imports consumequeue's D_OFFSET",
                     "ops/_layout_probe.py:4 uses commitlog's GEO_START",
                     "ops/_layout_probe.py:5 uses commitlog's STOP_BLANK"]


def test_the_scan_finds_a_name_served_by_getattr_used_outside():
    owners = _owners()
    assert {"HEADER_DTYPE", "SLOT_DTYPE", "ENTRY_DTYPE"} <= owners["rmqtool.structures.index"][1]
    assert "ENTRY_DTYPE" in owners["rmqtool.structures.consumequeue"][1]
    found = _probe("from rmqtool.structures import consumequeue\n\nROW = consumequeue.ENTRY_DTYPE\n")
    assert found == ["ops/_layout_probe.py:3 uses consumequeue's ENTRY_DTYPE"]
