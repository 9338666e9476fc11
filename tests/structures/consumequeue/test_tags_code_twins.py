"""The tagsCode rule has two forms in the consume queue's folder, Python (`consumequeue.tags_code`, what
query, decode and the queue check show) and compiled (`tagskernel.tags_code_at`, what dispatch writes into
the queues): they agree on the same inputs, a TAGS hash and a schedule-topic delivery time included, and the
dispatch kernel's tagsCode column is `record_tags_code` of each record."""

from __future__ import annotations

import numpy as np
import pytest

from rmqtool.structures import consumequeue
from rmqtool.structures.commitlog import message, properties, sysflag
from rmqtool.structures.commitlog.delay import SCHEDULE_TOPIC
from rmqtool.structures.commitlog.walker import Rows, walk_once
from rmqtool.structures.consumequeue.dispatchkernel import dispatch_records
from rmqtool.structures.consumequeue.tagskernel import tags_code_at

LEVELS = [1000, 5000, 10000]
CASES = [
    ("T", {"TAGS": "TagA"}),
    ("T", {}),
    ("T", {"TAGS": "标签-😀"}),
    ("T", {"DELAY": "2", "TAGS": "x"}),  # not the schedule topic: the TAGS hash
    (SCHEDULE_TOPIC, {"DELAY": "2", "TAGS": "x"}),
    (SCHEDULE_TOPIC, {"DELAY": "9"}),  # clamped to the highest level
    (SCHEDULE_TOPIC, {"DELAY": "+1"}),
    (SCHEDULE_TOPIC, {"DELAY": "0", "TAGS": "y"}),
    (SCHEDULE_TOPIC, {"DELAY": "-3", "TAGS": "y"}),
    (SCHEDULE_TOPIC, {"DELAY": "two", "TAGS": "z"}),
    (SCHEDULE_TOPIC, {"DELAY": "-"}),
    (SCHEDULE_TOPIC, {"TAGS": "only"}),
]


def _compiled(topic: str, props: dict[str, str], store_ts: int) -> int:
    """`tags_code_at` over a buffer holding the topic, then each value (spans -1 when absent)."""
    buf, spans = bytearray(topic.encode()), {}
    for name in ("TAGS", "DELAY"):
        if name in props:
            start = len(buf)
            buf += props[name].encode()
            spans[name] = (start, len(buf))
    arr = np.frombuffer(bytes(buf), dtype=np.uint8)
    (ts, te), (ds, de) = spans.get("TAGS", (-1, -1)), spans.get("DELAY", (-1, -1))
    return int(tags_code_at(arr, 0, len(topic.encode()), ts, te, ds, de, store_ts, np.array(LEVELS, dtype=np.int64)))


@pytest.mark.parametrize(("topic", "props"), CASES)
def test_the_compiled_tags_code_is_the_python_one(topic, props):
    assert _compiled(topic, props, 1000) == consumequeue.tags_code(topic, props, 1000, LEVELS)


def test_a_tags_hash_and_a_delivery_time():
    assert _compiled("T", {"TAGS": "TagA"}, 1000) == 2598919
    assert _compiled(SCHEDULE_TOPIC, {"DELAY": "2", "TAGS": "x"}, 1000) == 6000
    assert _compiled(SCHEDULE_TOPIC, {"DELAY": "9"}, 1000) == 11000


def _props(pairs: dict[str, str]) -> str:
    return "".join(f"{k}{properties.NAME_VALUE_SEPARATOR}{v}{properties.PROPERTY_SEPARATOR}" for k, v in pairs.items())


def test_dispatch_takes_each_records_tags_code_as_the_python_rule_does():
    msgs = [message.Message(topic, b"body", _props(props), store_timestamp=1_700_000_000_000 + i,
                            sys_flag=(sysflag.TRANSACTION_PREPARED if i == 3 else 0))
            for i, (topic, props) in enumerate(CASES)]
    buf = bytearray()
    for m in msgs:
        m.physical_offset = len(buf)
        buf += message.encode(m)
    buf += bytes(8)
    arr = np.frombuffer(bytes(buf), dtype=np.uint8)
    rows = Rows.empty(len(msgs) + 1)
    step = walk_once(arr, 0, len(arr), 0, rows)
    assert step.count == len(msgs)
    found = dispatch_records(arr, rows[: step.count], 0, np.array(LEVELS, dtype=np.int64))
    want = [consumequeue.record_tags_code(m, LEVELS) for m in msgs]
    assert want[3] is None and found.in_cq.tolist()[3] == 0  # a prepared record is not dispatched
    assert [int(c) for c, w in zip(found.tags_code, want, strict=True) if w is not None] == [
        w for w in want if w is not None]
    assert found.offset.tolist() == [m.physical_offset for m in msgs]
