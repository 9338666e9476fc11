"""What a JSONL block must be before Arrow's JSON reader parses it, checked in one compiled pass.

Arrow's reader crashes the process on a line that is only `null` and on nesting some thousand
levels deep, and passes bytes that are not UTF-8 into its text columns; Python's `json` raises
RecursionError on deep nesting. So every line of a block is checked first: it is one JSON
object (blank lines aside) with nothing after it, nested at most MAX_DEPTH levels, UTF-8 (no
byte sequence that is not, no `\\u` escape of a lone surrogate), and, inside the field named
by `no_null` (a producer row's properties), holds no `null`; a line that ends inside its object is
refused there, before a later line's fault. The pass does not parse JSON: what
is malformed otherwise is Arrow's to find. It keeps the name of the top-level field it is in,
so a refusal names the field.
"""

from __future__ import annotations

import json

import numpy as np

from rmqtool.engine.rules import NOT_UTF8
from rmqtool.io.schema import NULL_PROPERTY
from rmqtool.io.textkernels import utf8_len
from rmqtool.structures.jit import jitable, kernel

MAX_DEPTH = 32  # a row is depth 1, its properties 2: anything deeper is no producer row
OK, NOT_OBJECT, TEXT_AFTER, TOO_DEEP, BAD_UTF8, SURROGATE, NULL_VALUE, UNENDED = range(8)
REASONS = {
    UNENDED: "malformed JSON (the row's object does not end on its line)",
    TEXT_AFTER: "text after the row's object (one object per line)",
    TOO_DEEP: f"nested deeper than {MAX_DEPTH} levels",
    BAD_UTF8: NOT_UTF8,
    SURROGATE: f"{NOT_UTF8} (a lone surrogate)",
    NULL_VALUE: NULL_PROPERTY,
}
_SPECIAL_IN_STRING = b'"\\\n'  # with every byte >= 0x80
_SPECIAL_IN_OBJECT = b'"{}[],:n\n'  # (n: a null, in a field where none may be)


def _passes(special: bytes) -> np.ndarray:
    """Per byte value: whether the pass skips it (not in `special`, below 0x80)."""
    table = np.ones(256, dtype=np.bool_)
    table[list(special)] = False
    table[0x80:] = False
    return table


_PLAIN_IN_STRING, _PLAIN_IN_OBJECT = _passes(_SPECIAL_IN_STRING), _passes(_SPECIAL_IN_OBJECT)
_FIRST = {ord("n"): "null", ord("t"): "true", ord("f"): "false", ord("["): "a list", ord('"'): "a string"}


@jitable(inline=True)
def _hex4(data, at):
    """The value of four hex digits at `at`, or -1."""
    if at + 4 > data.shape[0]:
        return -1
    v = 0
    for k in range(4):
        c = data[at + k]
        if 48 <= c <= 57:
            d = c - 48
        elif 65 <= c <= 70:
            d = c - 55
        elif 97 <= c <= 102:
            d = c - 87
        else:
            return -1
        v = v * 16 + d
    return v


@kernel(nogil=True)  # always compiled: its Python reading of \u escapes is not the compiled one's
def first_bad_line(data, no_null, plain_in_string, plain_in_object):
    """(start of the first bad line, why, start and end of the top-level name it was in or -1) of a
    block; (-1, OK, -1, -1) when every line passes. Bytes the tables call plain (most of a block:
    text, numbers, spaces) are passed in tight loops."""
    n = data.shape[0]
    line = 0
    depth = 0
    in_str = False
    started = False  # the line's object has begun
    closed = False  # ... and ended
    expect_name = False  # the next string at depth 1 is a field name
    is_name = False  # the string being read is a field name
    name_start = -1  # of the string being read, or of the last field name
    name_end = -1
    str_start = -1
    watched = False  # inside the value of the field `no_null`
    i = 0
    while i < n:
        b = data[i]
        if in_str:
            while plain_in_string[b]:
                i += 1
                if i == n:
                    return -1, OK, -1, -1
                b = data[i]
        elif started and not closed:
            while plain_in_object[b]:
                i += 1
                if i == n:
                    return -1, OK, -1, -1
                b = data[i]
        if b == 10:  # a line ends: the next starts afresh (JSON text holds no raw newline)
            if started and not closed:
                return line, UNENDED, -1, -1
            line = i + 1
            depth = 0
            in_str = started = closed = expect_name = is_name = watched = False
            name_start = name_end = -1
            i += 1
            continue
        if b >= 0x80:
            size = utf8_len(data, i, data.shape[0])
            if size == 0:
                named = in_str and not is_name  # in a field's value
                return line, BAD_UTF8, (name_start if named else -1), (name_end if named else -1)
            i += size
            continue
        if in_str:
            if b == 92:  # backslash
                if i + 1 < n and data[i + 1] == 117:  # \u
                    cp = _hex4(data, i + 2)
                    if 0xD800 <= cp <= 0xDBFF:
                        low = _hex4(data, i + 8) if i + 7 < n and data[i + 6] == 92 and data[i + 7] == 117 else -1
                        if not 0xDC00 <= low <= 0xDFFF:
                            return line, SURROGATE, (-1 if is_name else name_start), name_end
                        i += 12
                        continue
                    if 0xDC00 <= cp <= 0xDFFF:
                        return line, SURROGATE, (-1 if is_name else name_start), name_end
                    i += 6 if cp >= 0 else 2
                    continue
                i += 1 if i + 1 < n and data[i + 1] == 10 else 2
                continue
            if b == 34:  # the string ends
                in_str = False
                if is_name:
                    name_start, name_end = str_start, i + 1
            i += 1
            continue
        if b == 32 or b == 9 or b == 13:
            i += 1
            continue
        if not started:
            if b != 123:  # {
                return line, NOT_OBJECT, -1, -1
            started = True
        elif closed:
            return line, TEXT_AFTER, -1, -1
        if b == 34:
            in_str = True
            str_start = i
            is_name = depth == 1 and expect_name
            expect_name = False
        elif b == 123 or b == 91:  # { [
            depth += 1
            if depth > MAX_DEPTH:
                return line, TOO_DEEP, name_start, name_end
            expect_name = depth == 1
        elif b == 125 or b == 93:  # } ]
            depth -= 1
            if depth <= 0:
                closed = True
        elif b == 44 and depth == 1:  # , between fields
            expect_name = True
            watched = False
        elif b == 58 and depth == 1:  # : after a field name
            watched = _same(data, name_start, name_end, no_null)
        elif b == 110 and watched and depth > 1:  # null inside the watched field
            return line, NULL_VALUE, name_start, name_end
        i += 1
    return -1, OK, -1, -1


@kernel(nogil=True)
def _same(data, start, end, word):
    same = start >= 0 and end - start == word.shape[0]
    k = 0
    while same and k < word.shape[0]:
        same = data[start + k] == word[k]
        k += 1
    return same


def check_block(block: memoryview | bytes, no_null: str | None = None) -> tuple[int, str, str | None] | None:
    """(byte offset of the first bad line, reason, the field it is in or None) of a JSONL block, or None."""
    data = np.frombuffer(block, dtype=np.uint8)
    word = np.frombuffer(json.dumps(no_null).encode() if no_null else b"", dtype=np.uint8)
    at, why, start, end = first_bad_line(data, word, _PLAIN_IN_STRING, _PLAIN_IN_OBJECT)
    if why == OK:
        return None
    if why == NOT_OBJECT:
        first = data[at:][np.flatnonzero(~np.isin(data[at:], (32, 9, 13)))[0]]
        what = _FIRST.get(int(first), "a number" if chr(first) in "-0123456789" else None)
        return at, "a row must be a JSON object" + (f", not {what}" if what else ""), None
    field = json.loads(bytes(data[start:end])) if start >= 0 else None
    return at, REASONS[why], field
