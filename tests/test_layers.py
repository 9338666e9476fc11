"""Imports only go down (DESIGN.md, Layers): read from the source with ast, nothing imported.

Every import counts, at module level, inside a function or under TYPE_CHECKING: `from x import y`
points at the module x.y when there is one, else at x; importing a.b.c also runs the packages a and
a.b, so the graph counts them too (a circle through a package `__init__` is a circle). Inside
`structures/` each folder is a unit: it imports a sibling folder only through the sibling's public
face (SHARED), and the folders import one another without a circle. The checks run on a plain graph
{module: {imported modules}}, so each is also shown failing on a small graph held in memory.
Tests take shared pieces from helper modules (cli_helpers, damage ...) or a conftest, never from
another test module, so each folder runs alone.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rmqtool"
TESTS = ROOT / "tests"

# Highest first; a module may import its own layer or a lower one. `__main__` only starts the CLI.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli", "bench", "__main__"),
    ("spark",),
    ("ops",),
    ("load",),
    ("io",),
    ("engine",),
    ("structures",),
    ("files",),
    ("report", "errors", "text", "page", "__init__"),
)
NOT_IN_STRUCTURES = ("engine", "ops", "load")

# What a structure folder may import of a sibling folder: the sibling's public face, one module a line.
SHARED: frozenset[str] = frozenset({
    "rmqtool.structures.checkpoint",  # the checkpoint's page and refusal (epoch reads 5.x's)
    "rmqtool.structures.commitlog.delay",  # the delay levels and the schedule topic
    "rmqtool.structures.commitlog.kernels",  # the one record walk (the DLedger entry walk calls it per body)
    "rmqtool.structures.commitlog.message",  # the record's layout and codec
    "rmqtool.structures.commitlog.pairs",  # a properties string's pairs as a kernel walks them
    "rmqtool.structures.commitlog.properties",  # the properties string and its keys
    "rmqtool.structures.commitlog.repairs",  # which queue findings the log's cut and repack mends
    "rmqtool.structures.commitlog.scan",  # the segment scanner and its finding kinds (the DLedger one extends it)
    "rmqtool.structures.commitlog.sysflag",  # the record's sysFlag bits
    "rmqtool.structures.commitlog.walker",  # the walk's rows by name (the dispatch kernel reads them)
    "rmqtool.structures.commitlog.window",  # the log's good records in a window, as log checkers are fed them
    "rmqtool.structures.config.persist",  # how a broker's JSON file is written
    "rmqtool.structures.consumequeue.renumber",  # the queue offsets a repack moves (consumer positions follow)
    "rmqtool.structures.index",  # the index file's layout and the key separator
})

Graph = dict[str, set[str]]


def module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(tree: ast.AST, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The known modules `name`'s source imports anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = name.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                source = ".".join(anchor + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                found.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source)
    return {m for m in found if m in known and m != name}


def import_graph(base: Path = PACKAGE) -> Graph:
    """{module: the rmqtool modules it imports} for every module under `base`, as its source names them."""
    paths = {module_name(p, base.parent): p for p in sorted(base.rglob("*.py"))}
    known = set(paths)
    return {name: imported(ast.parse(p.read_text(), str(p)), name, p.name == "__init__.py", known)
            for name, p in paths.items()}


def packages_above(module: str) -> list[str]:
    """The packages importing `module` runs first: rmqtool.structures.index.file -> rmqtool,
    rmqtool.structures, rmqtool.structures.index."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def with_packages(graph: Graph) -> Graph:
    """`graph` where each import also points at the packages it runs (those the graph knows)."""
    return {a: bs | {p for b in bs for p in packages_above(b) if p in graph and p != a} for a, bs in graph.items()}


def top_of(module: str) -> str:
    return module.split(".")[1] if "." in module else "__init__"


def layer_of(module: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if top_of(module) in names)


def without_layer(graph: Graph) -> list[str]:
    """The top-level packages and modules of rmqtool that LAYERS does not place."""
    return sorted({top_of(m) for m in graph} - {name for names in LAYERS for name in names})


def upward_imports(graph: Graph) -> list[str]:
    return sorted(f"{a} -> {b}" for a, bs in graph.items() for b in bs if layer_of(b) < layer_of(a))


def structure_imports_above(graph: Graph) -> list[str]:
    return sorted(f"{a} -> {b}" for a, bs in graph.items() if a.startswith("rmqtool.structures.")
                  for b in bs if top_of(b) in NOT_IN_STRUCTURES)


def structure_folders(graph: Graph) -> set[str]:
    """The folders inside structures/: the packages rmqtool.structures.<folder> that hold modules."""
    return {m.split(".")[2] for m in graph if m.startswith("rmqtool.structures.") and m.count(".") > 2}


def folder_of(module: str, folders: set[str]) -> str | None:
    """The structure folder a module lives in (rmqtool.structures.<folder> or .<folder>.x), None elsewhere
    (rmqtool.structures.layout and the other modules shared by all the folders included)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "structures" and parts[2] in folders else None


def folder_graph(graph: Graph) -> Graph:
    """{folder: the sibling folders its modules import}."""
    folders = structure_folders(graph)
    edges: Graph = {f: set() for f in folders}
    for a, bs in graph.items():
        for b in bs:
            fa, fb = folder_of(a, folders), folder_of(b, folders)
            if fa and fb and fa != fb:
                edges[fa].add(fb)
    return edges


def folders_importing_each_other(graph: Graph) -> list[str]:
    edges = folder_graph(graph)
    return sorted(f"{a} <-> {b}" for a, bs in edges.items() for b in bs if a < b and a in edges[b])


def sibling_imports_outside_shared(graph: Graph, shared: frozenset[str] = SHARED) -> list[str]:
    """`importer -> imported` wherever a structure folder imports a sibling's module that is not in `shared`."""
    folders = structure_folders(graph)
    return sorted(f"{a} -> {b}" for a, bs in graph.items() for b in bs
                  if folder_of(a, folders) and folder_of(b, folders) not in (None, folder_of(a, folders))
                  and b not in shared)


def import_circles(graph: Graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return sorted(circles)


def imports_of_test_modules(tests: Path = TESTS) -> list[str]:
    """`importer -> imported` wherever a file under `tests` imports a test module (test_*.py), by any name."""
    modules = {p.stem for p in tests.rglob("test_*.py")}
    found = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [f"{node.module or ''}.{a.name}" for a in node.names]
            else:
                continue
            found += [f"{path.relative_to(tests)} -> {name.strip('.')}" for name in names
                      if modules.intersection(name.split("."))]
    return found


NAMED = import_graph()  # the imports as the source names them
GRAPH = with_packages(NAMED)  # and the packages each runs


def test_every_top_level_package_has_a_layer():
    assert without_layer(GRAPH) == []


def test_every_module_imports_only_its_layer_or_lower():
    assert upward_imports(GRAPH) == []


def test_no_structure_imports_engine_ops_or_load():
    assert structure_imports_above(GRAPH) == []


def test_no_two_structure_folders_import_each_other():
    assert folders_importing_each_other(GRAPH) == []


def test_no_import_circle():
    assert import_circles(GRAPH) == []


def test_no_import_circle_through_a_package_init():
    """structures/__init__ held the registry, which imports every folder's structure.py, while the folders'
    modules import their own package through it (`from rmqtool.structures import index`)."""
    packages = {m for m in GRAPH if any(o.startswith(m + ".") for o in GRAPH)}
    assert [c for c in import_circles(GRAPH) if packages.intersection(c)] == []


def test_commitlog_and_dledger_import_one_way():
    """The DLedger log is the commitlog's other implementation, as in the broker: dledger reads the records
    its entries wrap with the commitlog's walk and scanner; the commitlog knows it only as a variant the
    registry hands it (commitlog/recognize.py imported the dledger package for its head check)."""
    edges = folder_graph(GRAPH)
    assert "commitlog" in edges["dledger"] and "dledger" not in edges["commitlog"]


def test_a_structure_folder_imports_a_sibling_only_through_shared():
    assert sibling_imports_outside_shared(NAMED) == []


def test_no_circle_among_structure_folders():
    assert import_circles(folder_graph(GRAPH)) == []


def test_every_shared_name_is_a_module_of_a_structure_folder():
    folders = structure_folders(GRAPH)
    assert sorted(m for m in SHARED if m not in GRAPH or folder_of(m, folders) is None) == []


def test_the_page_imports_only_text_of_rmqtool():
    """rmqtool.page draws a document it is given: nothing of the store layers, nor report or errors."""
    assert sorted({b for a, bs in NAMED.items() if top_of(a) == "page" for b in bs if top_of(b) != "page"}) \
        == ["rmqtool.text"]


def test_no_test_module_imports_another():
    assert imports_of_test_modules() == []


def test_graph_sees_function_level_type_checking_and_relative_imports(tmp_path):
    pkg = tmp_path / "rmqtool"
    (pkg / "engine").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "engine" / "__init__.py").write_text("from . import reader\n")
    (pkg / "engine" / "reader.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rmqtool import errors\n"
        "def f():\n    from ..report import Finding\n    import rmqtool.text\n")
    for name in ("errors", "report", "text"):
        (pkg / f"{name}.py").write_text("")
    assert import_graph(pkg) == {
        "rmqtool": set(), "rmqtool.engine": {"rmqtool.engine.reader"},
        "rmqtool.engine.reader": {"rmqtool.errors", "rmqtool.report", "rmqtool.text"},
        "rmqtool.errors": set(), "rmqtool.report": set(), "rmqtool.text": set()}


def test_a_package_without_a_layer_is_caught():
    assert without_layer({"rmqtool.ha.wire": set(), "rmqtool.ops.query": set(), "rmqtool": set()}) == ["ha"]


def test_an_upward_import_is_caught():
    graph = {"rmqtool.engine.reader": {"rmqtool.ops.query", "rmqtool.files.paths"},
             "rmqtool.cli.app": {"rmqtool.ops.query"}}
    assert upward_imports(graph) == ["rmqtool.engine.reader -> rmqtool.ops.query"]


def test_a_structure_importing_load_is_caught():
    graph = {"rmqtool.structures.timerlog.reader": {"rmqtool.load.writer", "rmqtool.structures.layout"}}
    assert structure_imports_above(graph) == ["rmqtool.structures.timerlog.reader -> rmqtool.load.writer"]


def test_two_structure_folders_importing_each_other_are_caught():
    graph = {"rmqtool.structures.index.check": {"rmqtool.structures.commitlog.scan"},
             "rmqtool.structures.commitlog.scan": {"rmqtool.structures.index.geometry"},
             "rmqtool.structures.checkpoint.file": {"rmqtool.structures.commitlog.scan"}}
    assert folders_importing_each_other(graph) == ["commitlog <-> index"]


def test_a_folders_package_module_is_in_its_folder():
    """commitlog/recognize.py imported the dledger package and dledger/scan.py the commitlog: a pair the
    check missed while a folder's package module was in no folder."""
    graph = {"rmqtool.structures.commitlog.recognize": {"rmqtool.structures.dledger"},
             "rmqtool.structures.dledger.scan": {"rmqtool.structures.commitlog.scan"},
             "rmqtool.structures.commitlog.scan": {"rmqtool.structures.layout"},
             "rmqtool.structures.dledger": set(), "rmqtool.structures.layout": set()}
    assert folder_of("rmqtool.structures.dledger", structure_folders(graph)) == "dledger"
    assert folder_of("rmqtool.structures.layout", structure_folders(graph)) is None
    assert folders_importing_each_other(graph) == ["commitlog <-> dledger"]


def test_the_graph_counts_the_packages_an_import_runs():
    graph = {"rmqtool": set(), "rmqtool.structures": {"rmqtool.structures.index.structure"},
             "rmqtool.structures.index": set(), "rmqtool.structures.index.structure": set(),
             "rmqtool.structures.index.file": {"rmqtool.structures.index"},
             "rmqtool.ops.query": {"rmqtool.structures.index.file"}}
    assert with_packages(graph) == {
        "rmqtool": set(), "rmqtool.structures": {"rmqtool", "rmqtool.structures.index",
                                                 "rmqtool.structures.index.structure"},
        "rmqtool.structures.index": set(), "rmqtool.structures.index.structure": set(),
        "rmqtool.structures.index.file": {"rmqtool", "rmqtool.structures", "rmqtool.structures.index"},
        "rmqtool.ops.query": {"rmqtool", "rmqtool.structures", "rmqtool.structures.index",
                              "rmqtool.structures.index.file"}}


def test_a_circle_through_a_package_init_is_caught():
    """A registry in the package's __init__ importing a folder whose module imports the package: no module
    names the circle, the packages the imports run close it."""
    graph = {"rmqtool.structures": {"rmqtool.structures.index.structure"},
             "rmqtool.structures.index": set(),
             "rmqtool.structures.index.structure": {"rmqtool.structures.index.file"},
             "rmqtool.structures.index.file": {"rmqtool.structures.index"}}
    assert import_circles(graph) == []
    assert import_circles(with_packages(graph)) == [
        ["rmqtool.structures", "rmqtool.structures.index.file", "rmqtool.structures.index.structure"]]


def test_a_sibling_import_outside_shared_is_caught():
    graph = {"rmqtool.structures.consumequeue.check": {"rmqtool.structures.commitlog.message",
                                                        "rmqtool.structures.commitlog.scan",
                                                        "rmqtool.structures.consumequeue.queue",
                                                        "rmqtool.structures.layout"},
             "rmqtool.structures.commitlog.message": set(), "rmqtool.structures.commitlog.scan": set(),
             "rmqtool.structures.consumequeue.queue": set(), "rmqtool.structures.layout": {"rmqtool.report"},
             "rmqtool.ops.verify": {"rmqtool.structures.commitlog.scan"}}
    assert sibling_imports_outside_shared(graph, frozenset({"rmqtool.structures.commitlog.message"})) == [
        "rmqtool.structures.consumequeue.check -> rmqtool.structures.commitlog.scan"]


def test_a_circle_among_three_structure_folders_is_caught():
    graph = {"rmqtool.structures.config.positions": {"rmqtool.structures.consumequeue.renumber"},
             "rmqtool.structures.consumequeue.check": {"rmqtool.structures.commitlog.message"},
             "rmqtool.structures.commitlog.delay": {"rmqtool.structures.config.topics"},
             "rmqtool.structures.index.file": {"rmqtool.structures.commitlog.message"}}
    assert folders_importing_each_other(graph) == []
    assert import_circles(folder_graph(graph)) == [["commitlog", "config", "consumequeue"]]


def test_an_import_circle_is_caught():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"g"}, "g": {"f"}}
    assert import_circles(graph) == [["a", "b", "c"], ["f", "g"]]


def test_a_test_module_importing_another_is_caught(tmp_path):
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "test_a.py").write_text("from test_b import GOOD\nfrom cli_helpers import run\n")
    (tmp_path / "ops" / "test_b.py").write_text("def f():\n    from tests.ops import test_a\n")
    (tmp_path / "cli_helpers.py").write_text("import tests.ops.test_b\n")
    assert imports_of_test_modules(tmp_path) == [
        "cli_helpers.py -> tests.ops.test_b", "ops/test_a.py -> test_b.GOOD", "ops/test_b.py -> tests.ops.test_a"]
