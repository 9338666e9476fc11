"""The JSON dialect of the broker's config files: what fastjson writes, integer map keys unquoted.

The broker persists its tables with fastjson's pretty format, and a `Map<Integer, Long>` (a group's
queue offsets, the schedule service's offset per delay level) keeps its keys as bare numbers:
`{"offsetTable":{"TopicTest@groupA":{0:250,1:248}}}` is what a strict JSON parser refuses.

`loads` reads that dialect (and plain JSON): a bare integer key comes back as an `int`, a quoted one
as a `str`, so a document read and written again keeps each key's form. `dumps` writes fastjson's
pretty format: a tab per level, no space after `:`, each string-keyed member on its own line,
integer-keyed members on the opening line and the closing brace on the next one, `{}` for an empty
map. Maps keep the order they were read in (the broker's own order is its hash map's, which no
reader relies on).
"""

from __future__ import annotations

import json
import re
from json.decoder import JSONDecodeError, scanstring
from json.scanner import py_make_scanner

_SPACE = re.compile(r"[ \t\n\r]*")
_INT_KEY = re.compile(r"-?(?:0|[1-9]\d*)")
Key = str | int


def _object(s_and_end, strict, scan_once, object_hook, object_pairs_hook, memo=None):
    """One `{...}` whose keys are strings or bare integers (the json scanner's object hook)."""
    text, at = s_and_end
    members: dict[Key, object] = {}
    at = _SPACE.match(text, at).end()
    if text[at : at + 1] == "}":
        return members, at + 1
    while True:
        if text[at : at + 1] == '"':
            key, at = scanstring(text, at + 1, strict)
        else:
            bare = _INT_KEY.match(text, at)
            if bare is None:
                raise JSONDecodeError("Expecting a property name or an integer key", text, at)
            key, at = int(bare.group()), bare.end()
        at = _SPACE.match(text, at).end()
        if text[at : at + 1] != ":":
            raise JSONDecodeError("Expecting ':' delimiter", text, at)
        at = _SPACE.match(text, at + 1).end()
        try:
            value, at = scan_once(text, at)
        except StopIteration as stop:
            raise JSONDecodeError("Expecting value", text, stop.value) from None
        members[key] = value  # a repeated key: the last one wins, as in fastjson
        at = _SPACE.match(text, at).end()
        ch, at = text[at : at + 1], at + 1
        if ch == "}":
            return members, at
        if ch != ",":
            raise JSONDecodeError("Expecting ',' delimiter", text, at - 1)
        at = _SPACE.match(text, at).end()


class _Decoder(json.JSONDecoder):
    def __init__(self) -> None:
        super().__init__(strict=False)  # fastjson reads a raw control character inside a string
        self.parse_object = _object
        self.scan_once = py_make_scanner(self)


_DECODER = _Decoder()
# A string, or a bare integer key (after `{` or `,`, before `:`): strings are matched whole first, so a
# key is only ever found outside them.
_STRING_OR_BARE_KEY = re.compile(r'"(?:[^"\\]|\\.)*"|([{,]\s*)(-?(?:0|[1-9]\d*))(\s*:)')
_MARK = "\x00"  # put before a bare key's digits while the C parser reads the text; never in broker files


def loads(text: str) -> object:
    """A document of the broker's dialect; `ValueError` (a `JSONDecodeError`) names where it breaks.

    Fast path: bare keys are quoted with a mark the broker never writes (a NUL), the C parser reads the
    text, and marked keys become ints again. A text that holds a NUL in any form, or that the fast path
    cannot read, is read by the dialect's own parser (which also says where a broken text breaks)."""
    if _MARK not in text and "\\u0000" not in text:
        marked = _STRING_OR_BARE_KEY.sub(_mark_key, text)
        try:
            return json.loads(marked, object_pairs_hook=_unmark_keys, strict=False)
        except ValueError:
            pass
    return _DECODER.decode(text)


def _mark_key(m: re.Match) -> str:
    return m.group(0) if m.group(2) is None else f'{m.group(1)}"{_MARK}{m.group(2)}"{m.group(3)}'


def _unmark_keys(pairs: list[tuple[str, object]]) -> dict:
    return {int(k[1:]) if k[:1] == _MARK else k: v for k, v in pairs}


def dumps(value: object) -> str:
    """`value` as the broker's `persist()` writes it (fastjson's pretty format)."""
    out: list[str] = []
    _write(value, 0, out)
    return "".join(out)


def _write(value: object, depth: int, out: list[str]) -> None:
    if isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        out.append("{")
        for i, (key, member) in enumerate(value.items()):
            if i:
                out.append(",")
            if isinstance(key, int) and not isinstance(key, bool):
                out.append(str(key))
            else:
                out.append("\n" + "\t" * (depth + 1) + _string(str(key)))
            out.append(":")
            _write(member, depth + 1, out)
        out.append("\n" + "\t" * depth + "}")
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[]")
            return
        out.append("[")
        for i, item in enumerate(value):
            out.append(("," if i else "") + "\n" + "\t" * (depth + 1))
            _write(item, depth + 1, out)
        out.append("\n" + "\t" * depth + "]")
    elif isinstance(value, str):
        out.append(_string(value))
    else:
        out.append(json.dumps(value))


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
