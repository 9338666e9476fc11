"""docs/json-schema.md read as a schema: its `| field | type | meaning |` tables, and a check of a JSON value
against them that names the command, the field and what the doc says.

The doc's conventions (stated at its top):
- A section (`##` or `###` heading) is named by the heading's first word; the commands in backticks in its
  heading (`info --json`, `decode commitlog --jsonl`) print it: the document of a `--json` command, each
  line of a `--jsonl` one (a line matches one of the sections that name the command).
- A table row names one or more fields, each in backticks; a field in parentheses may be absent. A nested
  field is a dotted path: `commitlog.segments`; `queues[].queueId` is a field of each element of the list
  `queues`; `freed.*.files` a field of each value of the object `freed`, whatever its key.
- The type column: `string`, `int`, `number` (int or float), `bool`, `null`, `object` (its fields are the
  rows below it), `list` (its elements' fields are the `[]` rows), `any` (any JSON value), `list of T`,
  `object of T` (any keys, each value a T), or the name of another section (a value of that shape);
  alternatives joined by ` or ` (`list of` and `object of` take the rest: `null or list of int`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

PRIMITIVES = ("string", "int", "number", "bool", "null", "object", "list", "any")
_HEADING = re.compile(r"^#{2,3}\s+(.*?)\s*$")
_ROW = re.compile(r"^\|(.*)\|\s*$")
_NAME = re.compile(r"^[A-Za-z][\w-]*")


@dataclass
class Type:
    """One alternative of a type column: a primitive, `list of`/`object of` an inner type, or a section."""

    kind: str  # a primitive, "listof", "mapof" or "ref"
    inner: list[Type] = field(default_factory=list)  # alternatives of the element or value type
    ref: str = ""

    def __str__(self) -> str:
        if self.kind in ("listof", "mapof"):
            return ("list of " if self.kind == "listof" else "object of ") + " or ".join(map(str, self.inner))
        return self.ref or self.kind


@dataclass
class Node:
    """A field: its types, whether it may be absent, and the fields under it (by name, `*` or `[]`)."""

    types: list[Type] = field(default_factory=list)
    optional: bool = False
    text: str = ""  # the type column as written
    children: dict[str, Node] = field(default_factory=dict)

    def child(self, name: str) -> Node:
        return self.children.setdefault(name, Node())


@dataclass
class Section:
    name: str
    heading: str
    commands: list[str]
    root: Node = field(default_factory=lambda: Node([Type("object")], text="object"))


def parse_type(text: str) -> list[Type]:
    """The alternatives of a type column (`int or null`, `list of message or corruption`)."""
    parts = [p.strip() for p in text.strip().split(" or ")]
    out: list[Type] = []
    for i, part in enumerate(parts):
        for prefix, kind in (("list of ", "listof"), ("object of ", "mapof")):
            if part.startswith(prefix):
                out.append(Type(kind, parse_type(" or ".join([part[len(prefix):], *parts[i + 1:]]))))
                return out
        if part in PRIMITIVES:
            out.append(Type(part))
        elif _NAME.fullmatch(part):
            out.append(Type("ref", ref=part))
        else:
            raise ValueError(f"unreadable type {text!r}")
    return out


def _path(name: str) -> list[str]:
    """`a.b[].c` -> ["a", "b", "[]", "c"]."""
    out: list[str] = []
    for part in name.split("."):
        lists = 0
        while part.endswith("[]"):
            part, lists = part[:-2], lists + 1
        out += ([part] if part else []) + ["[]"] * lists
    return out


def _fields(cell: str) -> list[tuple[str, bool]]:
    """The field names of a row's first cell, each with whether it is in parentheses (may be absent)."""
    out = []
    for m in re.finditer(r"(\(\s*)?`([^`]+)`", cell):
        out.append((m.group(2), bool(m.group(1))))
    return out


def parse(path: Path, known_commands: set[str]) -> dict[str, Section]:
    """Every section with a field table. `known_commands` are the command paths (`decode commitlog`) whose
    backticked mentions in a heading make the section that command's output."""
    sections: dict[str, Section] = {}
    current: Section | None = None
    header: list[str] | None = None
    for line in path.read_text().splitlines():
        m = _HEADING.match(line)
        if m:
            text = m.group(1)
            name = _NAME.match(text.lstrip("`"))
            current = Section(name.group(0) if name else text, text,
                              [c for c in re.findall(r"`([^`]+)`", text) if _command_path(c, known_commands)])
            header = None
            continue
        row = _ROW.match(line)
        if not row or current is None:
            header = None
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.group(1))]  # `\|` is a pipe inside a cell
        if header is None:
            header = cells
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        if header[:3] != ["field", "type", "meaning"]:
            continue
        if current.name in sections and sections[current.name] is not current:
            raise ValueError(f"two sections named {current.name!r}")
        sections[current.name] = current
        for name, optional in _fields(cells[0]):
            node = current.root
            for part in _path(name):
                node = node.child(part)
            node.types, node.optional, node.text = parse_type(cells[1]), optional, cells[1]
    return sections


def _command_path(mention: str, known: set[str]) -> str | None:
    """The command a heading's mention names (`decode commitlog --jsonl` -> `decode commitlog`), if any."""
    words = mention.split()
    for n in (2, 1):
        if len(words) > n and " ".join(words[:n]) in known and words[n].startswith("--"):
            return " ".join(words[:n])
    return None


def references(sections: dict[str, Section]) -> set[str]:
    """The section names the type columns name."""
    out: set[str] = set()

    def walk(types: list[Type]) -> None:
        for t in types:
            out.update([t.ref] if t.kind == "ref" else [])
            walk(t.inner)

    nodes = [s.root for s in sections.values()]
    while nodes:
        node = nodes.pop()
        walk(node.types)
        nodes += node.children.values()
    return out


class Checker:
    """Checks JSON values against the sections; each problem is one line naming the command and the field."""

    def __init__(self, sections: dict[str, Section]) -> None:
        self.sections = sections

    def sections_of(self, command: str) -> list[Section]:
        return [s for s in self.sections.values() if command in s.commands]

    def check(self, command: str, value: object) -> list[str]:
        """Problems of `value` as what `command` prints (a `--jsonl` line may match any of its sections)."""
        shapes = self.sections_of(command)
        if not shapes:
            return [f"{command}: no section of docs/json-schema.md names `{command}` in its heading"]
        best: list[str] | None = None
        for s in shapes:
            problems = self._node(value, s.root, "", s.name)
            if not problems:
                return []
            if best is None or len(problems) < len(best):
                best = problems
        return [f"{command}: {p}" for p in best or []]

    def _node(self, value: object, node: Node, path: str, section: str) -> list[str]:
        where = path or "(the document)"
        best: list[str] | None = None
        for t in node.types or [Type("object")]:  # a node only named in its fields' paths is an object
            problems = self._type(value, t, node, path, section)
            if problems is None:
                continue
            if not problems:
                return []
            if best is None or len(problems) < len(best):
                best = problems
        if best is not None:
            return best
        return [f"`{where}` is {_json_type(value)} {_short(value)}, the doc (section {section}) says "
                f"{node.text or 'object'}"]

    def _type(self, value: object, t: Type, node: Node, path: str, section: str) -> list[str] | None:
        """None: `value` is not of this kind at all; else the problems inside it."""
        k = t.kind
        if k in _SCALARS:
            return [] if _SCALARS[k](value) else None
        if k == "ref":
            target = self.sections.get(t.ref)
            if target is None:
                return [f"`{path}`: the doc (section {section}) names a type {t.ref!r} that no section defines"]
            return self._node(value, target.root, path, target.name) if isinstance(value, dict) else None
        if k == "object":
            return self._fields(value, node, path, section) if isinstance(value, dict) else None
        if k == "mapof":
            if not isinstance(value, dict):
                return None
            each = Node(t.inner, text=_text(t.inner))
            return [p for key, v in value.items() for p in self._node(v, each, _join(path, key), section)]
        if not isinstance(value, list):
            return None
        given = node.children.get("[]")
        if k == "listof":
            elem = Node(t.inner, text=_text(t.inner), children=given.children if given else {})
        elif given is None:
            return [f"`{path}` is a list, the doc (section {section}) documents no `{path}[]`"] if value else []
        else:
            elem = given if given.types else Node([Type("object")], text="object", children=given.children)
        return one_per_field([p for i, v in enumerate(value) for p in self._node(v, elem, f"{path}[{i}]", section)])

    def _fields(self, value: dict, node: Node, path: str, section: str) -> list[str]:
        problems = []
        for key, v in value.items():
            child = node.children.get(key) or node.children.get("*")
            name = _join(path, key)
            if child is None:
                problems.append(f"`{_generic(name)}` is not in the doc (section {section}): {_short(v)}")
                continue
            problems += self._node(v, child, name, section)
        for key, child in node.children.items():
            if key not in ("*", "[]") and not child.optional and key not in value:
                problems.append(f"`{_generic(_join(path, key))}` is missing; the doc (section {section}) lists it as "
                                f"{child.text} (in parentheses if it may be absent)")
        return problems


_SCALARS = {
    "any": lambda v: True,
    "null": lambda v: v is None,
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
}


def _text(types: list[Type]) -> str:
    return " or ".join(map(str, types))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _generic(path: str) -> str:
    """`groups[3].queues[0].lag` -> `groups[].queues[].lag`: the field as the doc names it."""
    return re.sub(r"\[\d+\]", "[]", path)


def one_per_field(problems: list[str]) -> list[str]:
    """One problem per field of a list's elements, not one per element: the first, its indices kept."""
    seen, out = set(), []
    for p in problems:
        key = _generic(p.split("`")[1] if "`" in p else p)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def _json_type(value: object) -> str:
    return {type(None): "null", bool: "a bool", int: "an int", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _short(value: object) -> str:
    text = repr(value)
    return f"({text[:60]}...)" if len(text) > 60 else f"({text})"
