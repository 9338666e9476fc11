"""The tagsCode rule compiled (numba): the twin of `consumequeue.tags_code` for kernels that read records in
place, given where the record's topic and its TAGS and DELAY values are in the buffer."""

from __future__ import annotations

import numpy as np

from rmqtool.structures.commitlog.delay import SCHEDULE_TOPIC
from rmqtool.structures.jit import jitable
from rmqtool.structures.nbutil import bytes_equal, java_hash_utf8, to_java_int

_SCHEDULE = np.frombuffer(SCHEDULE_TOPIC.encode(), dtype=np.uint8)
_MAX_INT_DIGITS = 10
_INT_MAX = 2**31 - 1


@jitable
def parse_java_int(buf, start, end):
    """Integer.parseInt over the ASCII digits of `buf[start:end]`: (ok, value)."""
    if start >= end:
        return False, 0
    neg = buf[start] == ord("-")
    p = start + 1 if buf[start] == ord("-") or buf[start] == ord("+") else start
    if p >= end or end - p > _MAX_INT_DIGITS:
        return False, 0
    v = 0
    for i in range(p, end):
        d = np.int64(buf[i]) - ord("0")
        if d < 0 or d > 9:
            return False, 0
        v = v * 10 + d
    if v > _INT_MAX + (1 if neg else 0):
        return False, 0
    return True, -v if neg else v


@jitable(inline=True)
def tags_code_at(buf, topic_start, topic_len, tags_start, tags_end, delay_start, delay_end, store_ts, levels):
    """The tagsCode of a record whose topic is `buf[topic_start:topic_start + topic_len]` and whose last
    TAGS and DELAY values span `[*_start, *_end)` (start -1: absent): the Java hash of TAGS, or on the
    schedule topic the delivery time of its DELAY level (clamped to the highest of `levels`, in ms)."""
    code = 0
    if tags_start >= 0:
        code = to_java_int(java_hash_utf8(buf, tags_start, tags_end, 0))
    if delay_start >= 0 and bytes_equal(buf, topic_start, topic_len, _SCHEDULE):
        ok, level = parse_java_int(buf, delay_start, delay_end)
        if ok:
            level = min(level, levels.shape[0])  # the broker clamps to its highest level
            if level > 0:
                code = store_ts + levels[level - 1]
    return code
