"""The hash index owns its rules (issue 41): its writer, the name of a new file, a file's slot, which geometry a
file is read with (the configured sizes overriding a file's own, a cut file skipped by a lookup) and which files
the cleanup leaves orphaned live in `structures/index/` (the queue's and the log's cleanup parts in theirs);
`engine/`, `ops/` and the rest ask. Read from the source with ast, nothing imported: a use is resolved through
the module's imports (`from rmqtool.structures import index` ... `index.file_name(...)`), so a new offender,
anywhere in the package, fails. Each check is also shown catching a small offender held in memory."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import rmqtool

PACKAGE = Path(rmqtool.__file__).parent
INDEX_FOLDER = ("structures", "index")
EXEMPT = ("bench",)  # benchmarks generate raw stores byte by byte on purpose
INDEX = "rmqtool.structures.index"
WRITER = (f"{INDEX}.file", f"{INDEX}.kernel")  # the index file the writer holds and the kernel that fills it
NAMING_AND_SLOTS = {f"{INDEX}.{name}" for name in ("file_name", "name_time", "NAME_FORMAT", "NAME_LEN", "slot_of",
                                                   "slot_position")}
GEOMETRY_RULES = {f"{INDEX}.geometry.geometry_of_size", f"{INDEX}.geometry.file_geometry",
                  f"{INDEX}.check.file_size", f"{INDEX}.check.fits"}
PER_FILE_GEOMETRY = "index_geometry"  # asking a file's geometry to decide on it (skip it, read it) is the index's
GEOMETRY_SETTINGS = {"maxHashSlotNum", "maxIndexNum"}
ORCHESTRATORS = ("ops/clean.py",)  # loop over the store's structure objects and hold no rule of theirs

Source = tuple[str, str]  # (path inside the package, text)


def package_sources() -> Iterator[Source]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] not in EXEMPT:
            yield rel.as_posix(), path.read_text()


def in_index_folder(rel: str) -> bool:
    return tuple(rel.split("/")[:2]) == INDEX_FOLDER


def module_of(rel: str) -> str:
    parts = ["rmqtool", *rel.removesuffix(".py").split("/")]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def bindings(tree: ast.AST, rel: str) -> dict[str, str]:
    """Local name -> the qualified name it was imported as, for every import of the module (any level)."""
    module = module_of(rel)
    package = module if rel.endswith("__init__.py") else module.rpartition(".")[0]
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                out[alias.asname or alias.name] = f"{base}.{alias.name}"
    return out


def qualified(node: ast.AST, bound: dict[str, str]) -> str | None:
    """`index.file_name` -> rmqtool.structures.index.file_name, through the module's imports."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        base = qualified(node.value, bound)
        return f"{base}.{node.attr}" if base else None
    return None


def uses(sources: Iterable[Source], wanted) -> list[str]:
    """`path:line name` for each name, outside the index folder, that `wanted(qualified name)` says is the index's."""
    found = []
    for rel, text in sources:
        if in_index_folder(rel):
            continue
        tree = ast.parse(text)
        bound = bindings(tree, rel)
        for node in ast.walk(tree):
            name = qualified(node, bound) if isinstance(node, ast.Name | ast.Attribute) else None
            if name is not None and wanted(name):
                found.append(f"{rel}:{node.lineno} {name}")
    return sorted(set(found))


def writer_outside(sources: Iterable[Source]) -> list[str]:
    """Pieces of the index writer outside its folder: a class named IndexService, the index file object or the
    kernel that fills it."""
    sources = list(sources)
    classes = [f"{rel}:{node.lineno} class {node.name}" for rel, text in sources if not in_index_folder(rel)
               for node in ast.walk(ast.parse(text)) if isinstance(node, ast.ClassDef) and node.name == "IndexService"]
    return classes + uses(sources, lambda name: name.rpartition(".")[0] in WRITER or name in WRITER)


def naming_outside(sources: Iterable[Source]) -> list[str]:
    return uses(sources, NAMING_AND_SLOTS.__contains__)


def geometry_rules_outside(sources: Iterable[Source]) -> list[str]:
    """The index's geometry rules used outside its folder, and each per-file geometry asked for there."""
    sources = list(sources)
    asked = [f"{rel}:{node.lineno} .{PER_FILE_GEOMETRY}" for rel, text in sources if not in_index_folder(rel)
             for node in ast.walk(ast.parse(text))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr == PER_FILE_GEOMETRY]
    return sorted(asked + uses(sources, GEOMETRY_RULES.__contains__))


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
        {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def settings_tested_against_given(sources: Iterable[Source]) -> list[str]:
    """Modules where the index geometry's settings (the strings, or a module constant holding them) are tested
    against the settings a broker.conf gave: the rule that configured sizes override a file's own."""
    found = []
    for rel, text in sources:
        tree = ast.parse(text)
        holders = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
                   if isinstance(t, ast.Name) and GEOMETRY_SETTINGS & _constants(node.value)}
        for node in ast.walk(tree):
            is_test = (isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd)) or \
                (isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops))
            if is_test and (GEOMETRY_SETTINGS & _constants(node) or holders & _names(node)) \
                    and any("given" in name for name in _names(node)):
                found.append(rel)
    return sorted(set(found))


def _constants(node: ast.AST) -> set[str]:
    return {c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)}


def orchestrator_reaches(sources: Iterable[Source], orchestrators: Iterable[str] = ORCHESTRATORS) -> list[str]:
    """What an orchestrator imports of a structure beyond the registry and the structure objects, or of the
    files it would read itself (`files.segments`)."""
    found = []
    for rel, text in sources:
        if rel not in orchestrators:
            continue
        for name in sorted(set(bindings(ast.parse(text), rel).values())):
            parts = name.split(".")
            reads_files = name.startswith("rmqtool.files.segments.")
            registry = name.startswith("rmqtool.structures.registry.")
            past_objects = parts[:2] == ["rmqtool", "structures"] and not registry \
                and not (len(parts) >= 4 and parts[3] == "structure")
            if reads_files or past_objects:
                found.append(f"{rel} -> {name}")
    return found


SOURCES = list(package_sources())


def test_the_index_writer_lives_in_the_index_folder():
    assert not (PACKAGE / "engine" / "index_service.py").exists()
    assert writer_outside(SOURCES) == []


def test_no_index_file_name_or_slot_is_computed_outside_the_index_folder():
    assert naming_outside(SOURCES) == []


def test_no_index_geometry_rule_outside_the_index_folder_ops_query_only_asks():
    assert geometry_rules_outside(SOURCES) == []


def test_configured_sizes_override_an_index_files_own_in_one_place():
    assert settings_tested_against_given(SOURCES) == ["structures/index/geometry.py"]


def test_ops_clean_holds_no_orphan_rule_of_a_structure():
    assert orchestrator_reaches(SOURCES) == []


# ---- each check catches a small offender -------------------------------------------------------------------
def test_a_new_index_writer_outside_its_folder_is_caught():
    sources = [("engine/keys.py", "from rmqtool.structures.index.file import IndexFile\nclass IndexService:\n"
                                  "    files: list[IndexFile]\n"),
               ("engine/names.py", "from rmqtool.structures.index.files import IndexFiles\nf: IndexFiles\n"),
               ("structures/index/service.py", "from rmqtool.structures.index.file import IndexFile\nf: IndexFile\n")]
    assert writer_outside(sources) == ["engine/keys.py:2 class IndexService",
                                       "engine/keys.py:3 rmqtool.structures.index.file.IndexFile"]


def test_a_name_or_slot_computed_outside_the_index_folder_is_caught_by_any_import_spelling():
    sources = [("spark/x.py", "from rmqtool.structures import index\nn = index.file_name(1)\n"),
               ("ops/y.py", "def f(h):\n    from rmqtool.structures.index import slot_of as s\n    return s(h, 4)\n"),
               ("load/z.py", "import rmqtool.structures.index\nt = rmqtool.structures.index.name_time('x')\n"),
               ("structures/index/service.py", "from rmqtool.structures import index\nn = index.file_name(1)\n")]
    assert naming_outside(sources) == ["load/z.py:2 rmqtool.structures.index.name_time",
                                       "ops/y.py:3 rmqtool.structures.index.slot_of",
                                       "spark/x.py:2 rmqtool.structures.index.file_name"]


def test_a_geometry_rule_or_a_per_file_geometry_outside_the_index_folder_is_caught():
    sources = [("ops/q.py", "def g(self, p, n):\n    from rmqtool.structures.index import check as c\n"
                            "    return self.reader.index_geometry(p, n) or c.file_size(p, n, 1, 2)\n"),
               ("structures/index/lookup.py", "def g(self, p):\n    return self.files.index_geometry(p)\n")]
    assert geometry_rules_outside(sources) == ["ops/q.py:3 .index_geometry", "ops/q.py:3 rmqtool.structures.index"
                                               ".check.file_size"]


def test_the_configured_override_written_twice_is_caught():
    sources = [("engine/opening.py", "def f(given):\n    return bool({'maxHashSlotNum', 'maxIndexNum'} & given)\n"),
               ("structures/index/geometry.py", "SETTINGS = ('maxHashSlotNum', 'maxIndexNum')\n"
                                                "def f(given):\n    return set(SETTINGS) & set(given)\n"),
               ("io/geometry.py", "SETTINGS = ('maxHashSlotNum', 'maxIndexNum')\n")]
    assert settings_tested_against_given(sources) == ["engine/opening.py", "structures/index/geometry.py"]


def test_an_orchestrator_reading_a_structures_files_is_caught():
    text = ("from rmqtool.structures.registry import REGISTRY\nfrom rmqtool.structures import consumequeue\n"
            "from rmqtool.structures.index import header_of\n"
            "from rmqtool.structures.commitlog import structure\nfrom rmqtool.files.segments import open_read_only\n")
    assert orchestrator_reaches([("ops/clean.py", text)]) == [
        "ops/clean.py -> rmqtool.files.segments.open_read_only", "ops/clean.py -> rmqtool.structures.consumequeue",
        "ops/clean.py -> rmqtool.structures.index.header_of"]
