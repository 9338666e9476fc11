"""Which records carry a property value, for many records in one compiled pass over their properties bytes.

A properties string is read as the broker reads it (`string2messageProperties`): a pair counts only with a
non-empty name and value, and a later pair of a name overwrites an earlier one. A value is compared whole
(TAGS, UNIQ_KEY) or word by word, words split at the key separator with empty words skipped, as the
broker splits KEYS into index keys.
"""

from __future__ import annotations

import numpy as np

from rmqtool.structures.commitlog.kernels import bytes_work
from rmqtool.structures.commitlog.pairs import pair_at
from rmqtool.structures.commitlog.properties import KEY_SEPARATOR
from rmqtool.structures.jit import kernel
from rmqtool.structures.nbutil import bytes_equal

_WORD_END = ord(KEY_SEPARATOR)


@kernel(nogil=True, work=bytes_work)
def _carries(buf, starts, lengths, whole_name, word_name, value, out):
    for r in range(starts.shape[0]):
        p = starts[r]
        end = p + lengths[r]
        whole_s = whole_e = word_s = word_e = -1
        while p < end:  # the last pair of each name the broker keeps
            k, q = pair_at(buf, p, end)
            if p < k < q - 1:
                if bytes_equal(buf, p, k - p, whole_name):
                    whole_s, whole_e = k + 1, q
                elif bytes_equal(buf, p, k - p, word_name):
                    word_s, word_e = k + 1, q
            p = q + 1
        hit = whole_s >= 0 and bytes_equal(buf, whole_s, whole_e - whole_s, value)
        w = word_s
        while word_s >= 0 and w < word_e and not hit:
            e = w
            while e < word_e and buf[e] != _WORD_END:
                e += 1
            hit = e > w and bytes_equal(buf, w, e - w, value)
            w = e + 1
        out[r] = hit


def carries(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, value: str, whole: str,
            words: str | None = None) -> np.ndarray:
    """A mask of the records whose properties (at buf[starts[i]:starts[i] + lengths[i]]) hold `value` as the
    value of the property `whole`, or as one of the space-separated words of the property `words`; names and
    value compared as UTF-8 bytes, in one pass over each record's properties."""
    out = np.zeros(len(starts), dtype=np.bool_)
    if len(starts):
        wanted = np.frombuffer(value.encode("utf-8", "surrogateescape"), dtype=np.uint8)
        _carries(buf, np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64), _name(whole),
                 _name(words or ""), wanted, out)
    return out


def _name(name: str) -> np.ndarray:
    return np.frombuffer(name.encode(), dtype=np.uint8)
