"""Queue offsets are assigned in three places and tagsCode computed in two (issue 41): each is a second copy
of the broker's rule waiting to disagree. The consume queue owns both: `consumequeue.offsets.QueueOffsets`
(the topicQueueTable, one record, a client batch or a vector) and `consumequeue.tags_code` with its compiled
twin in `consumequeue.tagskernel`. An AST scan of the package finds either rule written outside
`structures/consumequeue/`; each of its detectors is shown failing on a small source held in memory (the
table's behaviour: test_queue_offsets.py).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import rmqtool

PACKAGE = Path(rmqtool.__file__).parent
OWNER = Path("structures") / "consumequeue"

_TAGS_CODE = re.compile(r"tags_?code", re.I)
_QUEUE_OFFSET = re.compile(r"^(first_)?queue_?offset$", re.I)
_OFFSET_PLANNER = re.compile(r"(plan|assign|take|next|advance)\w*_queue_offsets?$", re.I)
_JAVA_HASHES = {"java_string_hash", "java_hash_utf8", "java_hash_step"}
_TAGS_NAMES = {"TAGS", "_TAGS"}
_RAW_TABLE = "dict[tuple[str, int], int]"
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _called(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _stores(tree: ast.AST) -> Iterator[tuple[ast.expr, ast.expr | None, ast.stmt]]:
    """(target, value, statement) of every assignment in `tree` (tuple targets unpacked)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            pairs = [(t, node.value) for t in node.targets]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            pairs = [(node.target, node.value)]
        else:
            continue
        for target, value in pairs:
            for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                yield t, value, node


def _is_queue_offset(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return bool(_QUEUE_OFFSET.match(target.id))
    if isinstance(target, ast.Attribute):
        return bool(_QUEUE_OFFSET.match(target.attr))
    return isinstance(target, ast.Subscript) and any(
        isinstance(c, ast.Constant) and c.value == "queueOffset" for c in ast.walk(target.slice))


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _adds(value: ast.expr | None) -> list[ast.BinOp]:
    """The additions in `value` (a counter advanced)."""
    return [b for b in ast.walk(value) if isinstance(b, ast.BinOp) and isinstance(b.op, ast.Add)] if value else []


def _reads_tags(node: ast.AST) -> bool:
    return any((isinstance(n, ast.Name) and n.id in _TAGS_NAMES and isinstance(n.ctx, ast.Load))
               or (isinstance(n, ast.Attribute) and n.attr in _TAGS_NAMES)
               or (isinstance(n, ast.Constant) and n.value == "TAGS") for n in ast.walk(node))


def offenders_in(rel: Path, text: str) -> list[str]:
    """What module `rel` (a path inside the package) does that only the consume queue may: assign a queue
    offset or compute a tagsCode."""
    tree = ast.parse(text)
    found: list[tuple[int, str]] = []
    for fn in (n for n in ast.walk(tree) if isinstance(n, _FUNCTIONS)):
        if _TAGS_CODE.search(fn.name):
            found.append((fn.lineno, f"defines a tagsCode function {fn.name}"))
        if _OFFSET_PLANNER.search(fn.name):
            found.append((fn.lineno, f"defines a queue offset planner {fn.name}"))
        calls = {_called(c) for c in ast.walk(fn) if isinstance(c, ast.Call)}
        if calls & _JAVA_HASHES and _reads_tags(fn):
            found.append((fn.lineno, f"{fn.name} hashes TAGS"))
        if "enters_consume_queue" in calls and any(_is_queue_offset(t) or (isinstance(t, ast.Subscript) and _adds(v))
                                                   for t, v, _ in _stores(fn)):
            found.append((fn.lineno, f"{fn.name} assigns queue offsets by the consume-queue rule"))
    for target, value, stmt in _stores(tree):
        if value is None:  # a declared field, not a value
            continue
        text_of = ast.unparse(target)
        if _TAGS_CODE.search(text_of):
            found.append((stmt.lineno, f"assigns a tagsCode {text_of}"))
        if isinstance(target, ast.Subscript) and any(_QUEUE_OFFSET.match(n) for b in _adds(value) for n in _names(b)):
            found.append((stmt.lineno, f"advances a queue offset counter {text_of}"))
        if _is_queue_offset(target) and any(isinstance(c, ast.Call) and _called(c) == "get" for c in ast.walk(value)):
            found.append((stmt.lineno, f"reads a queue offset table into {text_of}"))
        if (isinstance(stmt, ast.AnnAssign) and isinstance(target, ast.Attribute)
                and ast.unparse(stmt.annotation) == _RAW_TABLE):
            found.append((stmt.lineno, f"keeps a topic-queue table {text_of}"))
    return [f"{rel}:{line} {what}" for line, what in sorted(set(found))]


def _package_sources() -> Iterator[tuple[Path, str]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[: len(OWNER.parts)] != OWNER.parts:
            yield rel, path.read_text()


def offenders(sources: Iterable[tuple[Path, str]]) -> list[str]:
    return [hit for rel, text in sources for hit in offenders_in(rel, text)]


def test_no_queue_offset_or_tags_code_is_assigned_outside_the_consume_queue():
    found = offenders(_package_sources())
    assert not found, "\n".join(found)


def _probe(text: str) -> list[str]:
    return offenders_in(Path("engine") / "_probe.py", text)


def test_the_scan_finds_a_queue_offset_taken_by_the_consume_queue_rule():
    assert _probe("def put(self, msg, key):\n"
                  "    if sysflag.enters_consume_queue(msg.sys_flag):\n"
                  "        self.next[key] = self.next.get(key, 0) + 1\n") == [
        "engine/_probe.py:1 put assigns queue offsets by the consume-queue rule"]


def test_the_scan_finds_a_counter_advanced_by_a_batch_and_a_table_read():
    assert _probe("def put(self, key, n):\n"
                  "    first_queue_offset = self.counters.get(key, 0)\n"
                  "    self.counters[key] = first_queue_offset + n\n") == [
        "engine/_probe.py:2 reads a queue offset table into first_queue_offset",
        "engine/_probe.py:3 advances a queue offset counter self.counters[key]"]


def test_the_scan_finds_a_queue_offset_planner_and_a_kept_table():
    assert _probe("class Log:\n"
                  "    def __init__(self):\n"
                  "        self.table: dict[tuple[str, int], int] = {}\n\n"
                  "def plan_queue_offsets(keys, ids, flags, table):\n    return ids\n") == [
        "engine/_probe.py:3 keeps a topic-queue table self.table",
        "engine/_probe.py:5 defines a queue offset planner plan_queue_offsets"]


def test_the_scan_finds_a_tags_code_computed_outside():
    assert _probe("def entry_tags(props):\n    return java_string_hash(props[TAGS])\n\n"
                  "def kernel(buf, out, r, s, e):\n    out[r, D_TAGS_CODE] = java_hash_utf8(buf, s, e, 0)\n\n"
                  "def record_tags_code(msg):\n    return 0\n") == [
        "engine/_probe.py:1 entry_tags hashes TAGS",
        "engine/_probe.py:5 assigns a tagsCode out[r, D_TAGS_CODE]",
        "engine/_probe.py:7 defines a tagsCode function record_tags_code"]


def test_reading_queue_offsets_and_tags_codes_is_not_assigning_them():
    assert _probe("def show(found, msg, levels, out):\n"
                  "    queued = sysflag.enters_consume_queue(msg.sys_flag)\n"
                  "    out['delayLevel'], out['queue'] = levels[0], msg.queue_id\n"
                  "    row = {'tagsCode': consumequeue.record_tags_code(msg, levels)}\n"
                  "    lag = msg.queue_offset + 1\n"
                  "    return queued, row, lag, found.tags_code.copy()\n") == []
