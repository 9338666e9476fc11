"""A properties string's pairs as a kernel walks them: name, 0x01, value, 0x02, one after another.

The broker keeps a pair only when both its name and its value are non-empty, and a later pair of a name
overwrites an earlier one; the kernels that read properties (the dispatch, the filters) apply those rules
to the bounds `pair_at` gives.
"""

from __future__ import annotations

from rmqtool.structures.commitlog.properties import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR
from rmqtool.structures.jit import jitable

_PAIR_END = ord(PROPERTY_SEPARATOR)
_NAME_END = ord(NAME_VALUE_SEPARATOR)


@jitable(inline=True)
def pair_at(buf, p, end):
    """(name end, pair end) of the pair at buf[p] in properties ending at `end`: its name is buf[p:name_end],
    its value buf[name_end + 1:pair_end], the next pair starts at pair_end + 1; a pair the broker keeps has
    p < name_end < pair_end - 1."""
    q = p
    while q < end and buf[q] != _PAIR_END:
        q += 1
    k = p
    while k < q and buf[k] != _NAME_END:
        k += 1
    return k, q
