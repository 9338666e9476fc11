"""Properties strings of many producer rows at once, compiled.

A row without pairs of its own gets TAGS (when it has tags), KEYS (when it has keys) and a
UNIQ_KEY placeholder, in the order a java.util.HashMap iterates those names (one order per
combination, worked out by `properties.java_hashmap_order`). Rows with pairs of their own
come built already and are copied in place. The result is one byte buffer with offsets,
and where each generated UNIQ_KEY's digits go.
"""

from __future__ import annotations

import numpy as np

from rmqtool.structures.commitlog import properties
from rmqtool.structures.jit import jitable, kernel

_TAGS, _KEYS, _UNIQ = 0, 1, 2
_NAMES = [properties.TAGS, properties.KEYS, properties.UNIQ_KEY]
_SEP = ord(properties.PROPERTY_SEPARATOR)
_NV = ord(properties.NAME_VALUE_SEPARATOR)


def _orders() -> np.ndarray:
    """(4, 3) field codes per combination (has tags * 2 + has keys), -1 past the last."""
    out = np.full((4, 3), -1, dtype=np.int64)
    for code in range(4):
        names = [properties.TAGS] * (code >> 1) + [properties.KEYS] * (code & 1) + [properties.UNIQ_KEY]
        for k, name in enumerate(properties.java_hashmap_order(names)):
            out[code, k] = _NAMES.index(name)
    return out


_ORDERS = _orders()
_NAME_BUF = np.frombuffer("".join(_NAMES).encode(), dtype=np.uint8)
_NAME_OFF = np.cumsum([0, *(len(n) for n in _NAMES)]).astype(np.int64)


@jitable(inline=True)
def _copy(out, w, src, a, b):
    for k in range(b - a):  # a loop: short strings copy faster than through slices
        out[w + k] = src[a + k]
    return w + b - a


@kernel(nogil=True)
def _build(tag_buf, tag_off, has_tag, key_buf, key_off, has_key, own, own_buf, own_off, orders, name_buf,
           name_off, uniq_len, out_off, uniq_at, out):
    n = has_tag.shape[0]
    w = 0
    own_k = 0
    for r in range(n):
        out_off[r] = w
        if own[r]:
            w = _copy(out, w, own_buf, own_off[own_k], own_off[own_k + 1])
            own_k += 1
            uniq_at[r] = -1
            continue
        code = has_tag[r] * 2 + has_key[r]
        for k in range(3):
            f = orders[code, k]
            if f < 0:
                break
            if k:
                out[w] = _SEP
                w += 1
            w = _copy(out, w, name_buf, name_off[f], name_off[f + 1])
            out[w] = _NV
            w += 1
            if f == 2:
                uniq_at[r] = w
                for d in range(uniq_len):
                    out[w + d] = 48  # '0': the digits are written when the row's number is known
                w += uniq_len
            elif f == 0:
                w = _copy(out, w, tag_buf, tag_off[r], tag_off[r + 1])
            else:
                w = _copy(out, w, key_buf, key_off[r], key_off[r + 1])
    out_off[n] = w
    return w


def build_properties(tags: tuple[np.ndarray, np.ndarray, np.ndarray], keys: tuple[np.ndarray, np.ndarray, np.ndarray],
                     own: np.ndarray, own_texts: tuple[np.ndarray, np.ndarray], uniq_len: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes, n + 1 offsets, UNIQ_KEY digits offset or -1) of every row's properties. `tags` and
    `keys` are (bytes, offsets, present); rows where `own` is set take the next of `own_texts`."""
    (tag_buf, tag_off, has_tag), (key_buf, key_off, has_key) = tags, keys
    n = len(own)
    out_off = np.empty(n + 1, dtype=np.int64)
    uniq_at = np.empty(n, dtype=np.int64)
    args = (tag_buf, tag_off, has_tag.astype(np.int64), key_buf, key_off, has_key.astype(np.int64), own,
            own_texts[0], own_texts[1], _ORDERS, _NAME_BUF, _NAME_OFF, uniq_len, out_off, uniq_at)
    most = _NAME_OFF[-1] + 3 + 2 + uniq_len  # a row's names, '=' and separators and digits, at most
    text = sum(int(off[-1] - off[0]) for off in (tag_off, key_off, own_texts[1]) if len(off))
    out = np.empty(max(text + n * most, 1), dtype=np.uint8)
    size = _build(*args, out)
    return out[: max(size, 1)], out_off, uniq_at  # a view: the room is the exact size for rows with all three
