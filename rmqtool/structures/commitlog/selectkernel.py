"""Which records carry a property value, for many records in one compiled pass over their properties bytes.

A properties string is read as the broker reads it (`string2messageProperties`): a pair counts only with a
non-empty name and value, and a later pair of a name overwrites an earlier one. A value is compared whole
(TAGS, UNIQ_KEY) or word by word, words split at the key separator with empty words skipped, as the
broker splits KEYS into index keys.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rmqtool.structures.commitlog.properties import KEY_SEPARATOR, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR
from rmqtool.structures.nbutil import bytes_equal

_PAIR_END = ord(PROPERTY_SEPARATOR)
_NAME_END = ord(NAME_VALUE_SEPARATOR)
_WORD_END = ord(KEY_SEPARATOR)


@njit(cache=True, nogil=True)
def _carries(buf, starts, lengths, name, value, words, out):
    for r in range(starts.shape[0]):
        p = starts[r]
        end = p + lengths[r]
        value_s = value_e = -1
        while p < end:  # the last pair of `name` the broker keeps
            q = p
            while q < end and buf[q] != _PAIR_END:
                q += 1
            k = p
            while k < q and buf[k] != _NAME_END:
                k += 1
            if p < k < q - 1 and bytes_equal(buf, p, k - p, name):
                value_s, value_e = k + 1, q
            p = q + 1
        hit = False
        if value_s >= 0 and not words:
            hit = bytes_equal(buf, value_s, value_e - value_s, value)
        elif value_s >= 0:
            w = value_s
            while w < value_e and not hit:
                e = w
                while e < value_e and buf[e] != _WORD_END:
                    e += 1
                hit = e > w and bytes_equal(buf, w, e - w, value)
                w = e + 1
        out[r] = hit


def carries(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, name: str, value: str,
            words: bool = False) -> np.ndarray:
    """A mask of the records whose properties (at buf[starts[i]:starts[i] + lengths[i]]) hold `value` as the
    value of `name` (`words`: as one of its space-separated words); both compared as UTF-8 bytes."""
    out = np.zeros(len(starts), dtype=np.bool_)
    if len(starts):
        wanted = np.frombuffer(value.encode("utf-8", "surrogateescape"), dtype=np.uint8)
        _carries(buf, np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64),
                 np.frombuffer(name.encode(), dtype=np.uint8), wanted, words, out)
    return out
