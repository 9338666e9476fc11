"""A selection keeps the records the broker would call of that topic, queue, time, tag and key: TAGS, KEYS and
UNIQ_KEY read as the broker reads properties (a later pair wins, a pair with an empty value is dropped, KEYS
split at spaces with empty words skipped), and the first filter that left nothing is the one named."""

from __future__ import annotations

import pytest

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.message_store import MessageStore
from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.ops.log_rows import Tally, log_batches
from rmqtool.structures.commitlog.hosts import parse_host
from rmqtool.structures.commitlog.message import Message
from rmqtool.structures.commitlog.scan import RecordBatch
from rmqtool.structures.commitlog.selection import Selection

HOST = parse_host("10.0.0.1:9876")
# (topic, queue, store time, properties string) of each record, in log order
RECORDS = [
    ("T", 0, 1000, "TAGS\x01A\x02TAGS\x01B"),  # the later TAGS wins: B
    ("T", 1, 1001, "TAGS\x01A\x02TAGS\x01"),  # an empty value is dropped: A
    ("T", 2, 1002, "KEYS\x01  k1  k2 \x02UNIQ_KEY\x01U1"),  # words k1 and k2; the UNIQ_KEY U1
    ("U", 0, 1003, "KEYS\x01k1\x02TAGS\x01A"),
    ("T", 0, 1004, "KEYS\x01k10 xk1\x02UNIQ_KEY\x01U10"),  # neither k1 nor U1: whole words only
    ("U", 1, 1005, "tags\x01A\x02KEYS\x01\x02UNIQ_KEY\x01k2"),  # names are case-sensitive; k2 as the UNIQ_KEY
    ("T", 3, 1006, "TAGS\x01标签\x02KEYS\x01中文键 k1"),
]


@pytest.fixture(scope="module")
def reader(tmp_path_factory) -> StoreReader:
    root = tmp_path_factory.mktemp("sel") / "store"
    cfg = StoreConfig()
    cfg.mappedFileSizeCommitLog, cfg.mappedFileSizeConsumeQueue, cfg.maxHashSlotNum, cfg.maxIndexNum = 4096, 400, 8, 32
    with MessageStore(root, cfg) as store:
        for topic, queue, at, props in RECORDS:
            msg = Message(topic=topic, body=b"x", queue_id=queue, properties_string=props, born_host=HOST,
                          store_host=HOST, store_timestamp=at)
            assert store.put_message(msg, as_stored=True).ok
    return StoreReader(root, cfg)


def _picked(reader: StoreReader, selection: Selection, tally: Tally | None = None) -> list[int]:
    """The indexes in RECORDS of the records `selection` keeps."""
    times = [int(t) for item in log_batches(reader, selection=selection, tally=tally)
             if isinstance(item, RecordBatch) for t in item.cols["storeTimestamp"]]
    return [t - 1000 for t in times]


@pytest.mark.parametrize(("selection", "indexes"), [
    (Selection(tag="B"), [0]),
    (Selection(tag="A"), [1, 3]),
    (Selection(tag="标签"), [6]),
    (Selection(key="k1"), [2, 3, 6]),
    (Selection(key="k2"), [2, 5]),
    (Selection(key="U1"), [2]),
    (Selection(key="中文键"), [6]),
    (Selection(topic="T", key="k1"), [2, 6]),
    (Selection(queue=0), [0, 3, 4]),
    (Selection(topic="T", queue=0), [0, 4]),
    (Selection(begin=1002, end=1004), [2, 3, 4]),
    (Selection(topic="U", tag="A", begin=1003), [3]),
])
def test_a_selection_keeps_the_records_the_broker_reads_as_matching(reader, selection, indexes):
    assert _picked(reader, selection) == indexes


def test_a_tag_is_not_found_in_a_lowercase_name_or_a_prefix_of_a_key(reader):
    assert _picked(reader, Selection(topic="U", queue=1, tag="A")) == []
    assert _picked(reader, Selection(key="k")) == []


@pytest.mark.parametrize(("selection", "why"), [
    (Selection(topic="T", queue=9), "none of the 5 records of topic T is in queue 9"),
    (Selection(topic="T", queue=0, tag="A"), "none of the 2 records of topic T in queue 0 is tagged A"),
    (Selection(queue=2, begin=1003), "none of the 1 record in queue 2 was stored at or after "
                                     "1970-01-01T00:00:01.003Z"),
    (Selection(tag="B", key="k1"), "none of the 1 record tagged B carries the key k1 (a KEYS word or the UNIQ_KEY)"),
])
def test_an_empty_selection_names_the_first_filter_that_left_nothing(reader, selection, why):
    tally = Tally()
    assert _picked(reader, selection, tally) == []
    assert tally.why_empty(reader, 0, selection) == why


@pytest.mark.parametrize(("fields", "said"), [
    ({"queue": -1}, "--queue -1: a queue id is 0 or more"),
    ({"tag": ""}, "--tag '' names no tag"),
    ({"key": ""}, "--key '' names no key"),
    ({"begin": 5, "end": 4}, "is after --end"),
])
def test_a_selection_no_record_could_pass_is_refused(fields, said):
    with pytest.raises(RmqError, match=said.replace("(", r"\(")):
        Selection(**fields)
