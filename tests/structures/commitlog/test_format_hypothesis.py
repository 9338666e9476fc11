"""Property tests: random records, properties, batches and msgIds survive encode -> decode."""

from __future__ import annotations

import ipaddress

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqtool.structures.commitlog import batch, crc, message, msgid, properties
from rmqtool.structures.commitlog.hosts import SocketAddress
from rmqtool.structures.commitlog.message import Message

INT = st.integers(-(2**31), 2**31 - 1)
LONG = st.integers(-(2**63), 2**63 - 1)
PORT = st.integers(0, 65535)
TEXT = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=20)

hosts = st.one_of(
    st.builds(lambda a, p: SocketAddress(ipaddress.IPv4Address(a).packed, p), st.integers(0, 2**32 - 1), PORT),
    st.builds(lambda a, p: SocketAddress(ipaddress.IPv6Address(a).packed, p), st.integers(0, 2**128 - 1), PORT),
)
topics = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(
    lambda t: len(t.encode()) <= message.MAX_TOPIC_LEN_V1)
bodies = st.one_of(st.binary(max_size=64), st.binary(min_size=5000, max_size=70000))
props = st.dictionaries(TEXT.filter(bool), TEXT, max_size=6)


@st.composite
def messages(draw):
    body = draw(bodies)
    m = Message(topic=draw(topics), body=body, properties_string=properties.build(draw(props)),
                queue_id=draw(INT), flag=draw(INT), queue_offset=draw(LONG), physical_offset=draw(LONG),
                sys_flag=draw(st.integers(0, 0x7FF)), born_timestamp=draw(LONG), born_host=draw(hosts),
                store_timestamp=draw(LONG), store_host=draw(hosts), reconsume_times=draw(INT),
                prepared_transaction_offset=draw(LONG), body_crc=crc.body_crc(body))
    return m.with_host_flags()


@settings(max_examples=150, deadline=None)
@given(messages())
def test_record_round_trip(m):
    raw = message.encode(m)
    got = message.decode(raw, expected_offset=m.physical_offset)
    assert isinstance(got, Message)
    m.store_size = len(raw)
    assert got == m
    assert message.decode(raw + b"\x00" * 8, 0, len(raw)) == got


@settings(max_examples=100, deadline=None)
@given(props)
def test_properties_build_parse_round_trip(pairs):
    assert properties.parse(properties.build(pairs)) == pairs


@settings(max_examples=100, deadline=None)
@given(st.lists(st.builds(batch.BatchItem, INT, st.binary(max_size=100),
                          st.builds(properties.build, props)), max_size=8))
def test_batch_round_trip(items):
    assert batch.decode(batch.encode(items)) == items


@settings(max_examples=100, deadline=None)
@given(hosts, st.integers(0, 2**63 - 1))
def test_msgid_round_trip(host, offset):
    assert msgid.decode(msgid.create(host, offset)) == (host, offset)
