"""Compiled loops that turn many byte strings into JSON text at once (numba).

Every function takes a column as `(data, offsets)`: row i is `data[offsets[i]:offsets[i+1]]`,
the layout of an Arrow binary or string array. Strings are escaped exactly as Python's
`json.dumps(..., ensure_ascii=False)` escapes them, so the lines equal the ones the
standard library would write. Rows must be valid UTF-8 (callers check with `utf8_valid`).
"""

from __future__ import annotations

import numpy as np

from rmqtool.structures.jit import jitable, kernel
from rmqtool.structures.nbutil import copy_bytes

_QUOTE = ord('"')
_BACKSLASH = ord("\\")
_HEX_LOWER = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8)
_NULL = np.frombuffer(b"null", dtype=np.uint8)
_LONG_MIN_DIGITS = np.frombuffer(b"9223372036854775808", dtype=np.uint8)
_DIGIT_PAIRS = np.frombuffer(b"".join(b"%02d" % i for i in range(100)), dtype=np.uint8)  # "00" .. "99"
_POWERS_OF_TEN = np.array([10**k for k in range(19)], dtype=np.int64)
_SHORT_ESCAPES = {8: ord("b"), 9: ord("t"), 10: ord("n"), 12: ord("f"), 13: ord("r")}


def _per_byte(data, *_) -> int:
    """A call as Python: about a microsecond a byte of its text (a kernel's `work` rule, structures/jit.py)."""
    return len(data)


def _assembly(plan, literals, lit_off, ints, int_nulls, frags, frag_offs, n) -> int:
    """`assemble_lines` as Python: a microsecond a step of each row, and one a byte of its text."""
    return int(n) * len(plan) + sum(len(f) for f in frags)


def _escape_table() -> np.ndarray:
    """Per byte: 0 = copy, 1 = two-character escape (the letter in column 1), 2 = \\u00XX."""
    table = np.zeros((256, 2), dtype=np.uint8)
    for b in range(0x20):
        table[b] = (1, _SHORT_ESCAPES[b]) if b in _SHORT_ESCAPES else (2, 0)
    table[_QUOTE] = (1, _QUOTE)
    table[_BACKSLASH] = (1, _BACKSLASH)
    return table


_ESCAPES = _escape_table()


@jitable(inline=True)
def utf8_len(data, p, end):
    """Bytes of the well-formed UTF-8 sequence starting at `p` (a byte >= 0x80) and ending before `end`, or 0
    (overlongs, surrogates and values past U+10FFFF are not well formed)."""
    b = data[p]
    if 0xC2 <= b <= 0xDF:
        need, lo, hi = 1, 0x80, 0xBF
    elif b == 0xE0:
        need, lo, hi = 2, 0xA0, 0xBF
    elif b == 0xED:
        need, lo, hi = 2, 0x80, 0x9F
    elif 0xE1 <= b <= 0xEF:
        need, lo, hi = 2, 0x80, 0xBF
    elif b == 0xF0:
        need, lo, hi = 3, 0x90, 0xBF
    elif 0xF1 <= b <= 0xF3:
        need, lo, hi = 3, 0x80, 0xBF
    elif b == 0xF4:
        need, lo, hi = 3, 0x80, 0x8F
    else:
        return 0
    if p + need >= end:
        return 0
    c = data[p + 1]
    if c < lo or c > hi:
        return 0
    for k in range(2, need + 1):
        c = data[p + k]
        if c < 0x80 or c > 0xBF:
            return 0
    return need + 1


@kernel(nogil=True, work=_per_byte)
def utf8_valid(data, offsets):
    """Per row: whether it is well-formed UTF-8 (`utf8_len`)."""
    n = offsets.shape[0] - 1
    ok = np.ones(n, dtype=np.bool_)
    for i in range(n):
        p, end = offsets[i], offsets[i + 1]
        while p < end:
            if data[p] < 0x80:
                p += 1
                continue
            size = utf8_len(data, p, end)
            if size == 0:
                ok[i] = False
                break
            p += size
    return ok


@jitable(inline=True)
def _escaped_len(data, s, e, table):
    n = 0
    for p in range(s, e):
        kind = table[data[p], 0]
        n += 1 if kind == 0 else (2 if kind == 1 else 6)
    return n


@jitable(inline=True)
def _write_escaped(out, w, data, s, e, table, hexd):
    for p in range(s, e):
        b = data[p]
        kind = table[b, 0]
        if kind == 0:
            out[w] = b
            w += 1
        elif kind == 1:
            out[w] = _BACKSLASH
            out[w + 1] = table[b, 1]
            w += 2
        else:
            out[w] = _BACKSLASH
            out[w + 1] = ord("u")
            out[w + 2] = ord("0")
            out[w + 3] = ord("0")
            out[w + 4] = hexd[b >> 4]
            out[w + 5] = hexd[b & 15]
            w += 6
    return w


@kernel(nogil=True, work=_per_byte)
def json_strings(data, offsets, valid):
    """Each row as a quoted, escaped JSON string; rows where `valid` is False become `null`."""
    n = offsets.shape[0] - 1
    out_off = np.empty(n + 1, dtype=np.int64)
    out_off[0] = 0
    for i in range(n):
        size = _escaped_len(data, offsets[i], offsets[i + 1], _ESCAPES) + 2 if valid[i] else 4
        out_off[i + 1] = out_off[i] + size
    out = np.empty(out_off[n], dtype=np.uint8)
    for i in range(n):
        w = out_off[i]
        if not valid[i]:
            out[w : w + 4] = _NULL
            continue
        out[w] = _QUOTE
        w = _write_escaped(out, w + 1, data, offsets[i], offsets[i + 1], _ESCAPES, _HEX_LOWER)
        out[w] = _QUOTE
    return out, out_off


@kernel(nogil=True, work=_per_byte)
def base64_strings(data, offsets):
    """Each row as a quoted standard base64 string (with padding)."""
    n = offsets.shape[0] - 1
    out_off = np.empty(n + 1, dtype=np.int64)
    out_off[0] = 0
    for i in range(n):
        out_off[i + 1] = out_off[i] + (offsets[i + 1] - offsets[i] + 2) // 3 * 4 + 2
    out = np.empty(out_off[n], dtype=np.uint8)
    for i in range(n):
        w = out_off[i]
        out[w] = _QUOTE
        w += 1
        p, end = offsets[i], offsets[i + 1]
        while p + 3 <= end:
            v = (np.int64(data[p]) << 16) | (np.int64(data[p + 1]) << 8) | np.int64(data[p + 2])
            out[w] = _B64[v >> 18]
            out[w + 1] = _B64[(v >> 12) & 63]
            out[w + 2] = _B64[(v >> 6) & 63]
            out[w + 3] = _B64[v & 63]
            w += 4
            p += 3
        left = end - p
        if left:
            v = np.int64(data[p]) << 16
            if left == 2:
                v |= np.int64(data[p + 1]) << 8
            out[w] = _B64[v >> 18]
            out[w + 1] = _B64[(v >> 12) & 63]
            out[w + 2] = _B64[(v >> 6) & 63] if left == 2 else ord("=")
            out[w + 3] = ord("=")
            w += 4
        out[w] = _QUOTE
    return out, out_off


@kernel(nogil=True, work=_per_byte)
def hex_strings(data, offsets):
    """Each row as a quoted lowercase hex string."""
    n = offsets.shape[0] - 1
    out_off = np.empty(n + 1, dtype=np.int64)
    out_off[0] = 0
    for i in range(n):
        out_off[i + 1] = out_off[i] + 2 * (offsets[i + 1] - offsets[i]) + 2
    out = np.empty(out_off[n], dtype=np.uint8)
    for i in range(n):
        w = out_off[i]
        out[w] = _QUOTE
        w += 1
        for p in range(offsets[i], offsets[i + 1]):
            out[w] = _HEX_LOWER[data[p] >> 4]
            out[w + 1] = _HEX_LOWER[data[p] & 15]
            w += 2
        out[w] = _QUOTE
    return out, out_off


@kernel(nogil=True, work=lambda keys, key_off, values, *_: len(keys) + len(values))
def json_objects(keys, key_off, values, value_off, row_off):
    """Row i as a JSON object of the string pairs row_off[i] .. row_off[i+1]-1 (keys and values escaped)."""
    n = row_off.shape[0] - 1
    out_off = np.empty(n + 1, dtype=np.int64)
    out_off[0] = 0
    for i in range(n):
        size = 2
        for j in range(row_off[i], row_off[i + 1]):
            size += _escaped_len(keys, key_off[j], key_off[j + 1], _ESCAPES)
            size += _escaped_len(values, value_off[j], value_off[j + 1], _ESCAPES) + 5
        if row_off[i + 1] > row_off[i]:
            size += row_off[i + 1] - row_off[i] - 1
        out_off[i + 1] = out_off[i] + size
    out = np.empty(out_off[n], dtype=np.uint8)
    for i in range(n):
        w = out_off[i]
        out[w] = ord("{")
        w += 1
        for j in range(row_off[i], row_off[i + 1]):
            if j > row_off[i]:
                out[w] = ord(",")
                w += 1
            out[w] = _QUOTE
            w = _write_escaped(out, w + 1, keys, key_off[j], key_off[j + 1], _ESCAPES, _HEX_LOWER)
            out[w] = _QUOTE
            out[w + 1] = ord(":")
            out[w + 2] = _QUOTE
            w = _write_escaped(out, w + 3, values, value_off[j], value_off[j + 1], _ESCAPES, _HEX_LOWER)
            out[w] = _QUOTE
            w += 1
        out[w] = ord("}")
    return out, out_off


@kernel(nogil=True, work=_per_byte)
def split_pairs(data, offsets, pair_end, name_end):
    """The pairs of every row of `name<name_end>value<pair_end>...` text, as Python's dict would keep them.

    Empty pairs are skipped; a pair without `name_end` has an empty value; a name met again in the
    same row keeps its first place and takes the later value. Returns (key starts, key lengths,
    value starts, value lengths, pairs per row offsets).
    """
    n = offsets.shape[0] - 1
    cap = 0
    for i in range(n):
        for p in range(offsets[i], offsets[i + 1]):
            cap += data[p] == pair_end
        cap += 1
    ks = np.empty(cap, dtype=np.int64)
    kl = np.empty(cap, dtype=np.int64)
    vs = np.empty(cap, dtype=np.int64)
    vl = np.empty(cap, dtype=np.int64)
    row_off = np.empty(n + 1, dtype=np.int64)
    row_off[0] = 0
    m = 0
    for i in range(n):
        first = m
        p, end = offsets[i], offsets[i + 1]
        while p <= end:
            q = p
            while q < end and data[q] != pair_end:
                q += 1
            if q > p:
                sep = p
                while sep < q and data[sep] != name_end:
                    sep += 1
                key_len = sep - p
                v_start = sep + 1 if sep < q else q
                slot = m
                for j in range(first, m):  # a name seen before in this row keeps its place
                    if kl[j] == key_len:
                        same = True
                        for k in range(key_len):
                            if data[ks[j] + k] != data[p + k]:
                                same = False
                                break
                        if same:
                            slot = j
                            break
                ks[slot] = p
                kl[slot] = key_len
                vs[slot] = v_start
                vl[slot] = q - v_start
                if slot == m:
                    m += 1
            p = q + 1
        row_off[i + 1] = m
    return ks[:m], kl[:m], vs[:m], vl[:m], row_off


@jitable(inline=True)
def _write_int(out, w, v):
    """Decimal digits of `v` at out[w:], two at a time from a pair table; returns the end."""
    if v < 0:
        out[w] = ord("-")
        w += 1
        if v == -9223372036854775808:  # its negation does not fit
            out[w : w + _LONG_MIN_DIGITS.shape[0]] = _LONG_MIN_DIGITS
            return w + _LONG_MIN_DIGITS.shape[0]
        v = -v
    k = 1
    while k < _POWERS_OF_TEN.shape[0] and v >= _POWERS_OF_TEN[k]:
        k += 1
    end = w + k
    p = end
    while v >= 100:
        q = v // 100
        r = 2 * (v - q * 100)
        p -= 2
        out[p] = _DIGIT_PAIRS[r]
        out[p + 1] = _DIGIT_PAIRS[r + 1]
        v = q
    if v >= 10:
        out[p - 2] = _DIGIT_PAIRS[2 * v]
        out[p - 1] = _DIGIT_PAIRS[2 * v + 1]
    else:
        out[p - 1] = ord("0") + v
    return end


@kernel(nogil=True, work=_assembly)
def assemble_lines(plan, literals, lit_off, ints, int_nulls, frags, frag_offs, n):
    """One JSON line per row (n rows): for each plan step (kind, index), the literal `index` when kind
    is 0, integer column `ints[index]` (or `null` where `int_nulls[index]`) when kind is 1, the row's
    piece of text column `frags[index]` (cut at `frag_offs[index]`) when kind is 2; every line ends with
    a newline. Returns the bytes of all lines."""
    per_row = 1
    for s in range(plan.shape[0]):
        kind, idx = plan[s, 0], plan[s, 1]
        if kind == 0:
            per_row += lit_off[idx + 1] - lit_off[idx]
        elif kind == 1:
            per_row += 20
    total = per_row * n
    for c in range(len(frag_offs)):
        total += frag_offs[c][n] - frag_offs[c][0]
    out = np.empty(total, dtype=np.uint8)
    w = 0
    for i in range(n):
        for s in range(plan.shape[0]):
            kind, idx = plan[s, 0], plan[s, 1]
            if kind == 0:
                a, b = lit_off[idx], lit_off[idx + 1]
                copy_bytes(out, w, literals, a, b - a)
                w += b - a
            elif kind == 1:
                if int_nulls[idx][i]:
                    out[w : w + 4] = _NULL
                    w += 4
                else:
                    w = _write_int(out, w, ints[idx][i])
            else:
                offs = frag_offs[idx]
                a, b = offs[i], offs[i + 1]
                copy_bytes(out, w, frags[idx], a, b - a)
                w += b - a
        out[w] = ord("\n")
        w += 1
    return out[:w]
