"""The commitlog record's rules as functions of its folder: the segment-fit rule (a record must leave room for
the 8-byte end marker), where storeTimestamp sits (an IPv6 born host moves it), the properties-size limit, host
widths, the unique key's address part and a client batch's item capacity. Compiled twins agree with Python."""

from __future__ import annotations

import numpy as np
import pytest

from rmqtool.structures.commitlog import batchkernel, hosts, kernels, message, properties, sysflag, uniqkey
from rmqtool.structures.commitlog.hosts import parse_host

V4, V6 = parse_host("192.0.2.1:30000"), parse_host("[2001:db8::17]:30001")
FLAGS = (0, sysflag.BORN_HOST_V6, sysflag.STORE_HOST_V6, sysflag.BORN_HOST_V6 | sysflag.STORE_HOST_V6)


def test_record_leaving_less_than_a_blank_marker_is_said_to_fit():
    assert message.fits(4088, 4096) and message.fits(0, 8)
    assert not message.fits(4089, 4096) and not message.fits(0, 7)
    assert message.fits(np.array([4087, 4088, 4089]), 4096).tolist() == [True, True, False]
    assert message.usable(4096) == 4088 and message.usable(np.array([8, 100])).tolist() == [0, 92]


def test_compiled_fit_rule_disagrees_with_python():
    for size in range(0, 40):
        for room in range(0, 40):
            assert kernels.fits(size, room) == message.fits(size, room), (size, room)


def test_blank_marker_reach_is_not_eight_bytes_past_the_record():
    assert message.reach(100, 50) == 158
    assert message.reach(100) == 108


def test_blank_marker_written_over_more_than_its_eight_bytes():
    buf = bytearray(b"\xff" * 32)
    message.write_blank(buf, 4, 1000)
    assert bytes(buf) == b"\xff" * 4 + message.encode_blank(1000) + b"\xff" * 20
    assert message.decode(buf, 4) == message.Blank(1000)


def test_byte_seven_of_a_prefix_not_seen_as_written():
    buf = bytearray(24)
    assert message.unwritten(buf, 4)
    buf[4 + 7] = 1
    assert not message.unwritten(buf, 4)
    assert message.unwritten(buf, 12)  # the byte before `pos` is not looked at
    assert message.unwritten(buf, 24)  # nothing past the end


def test_store_timestamp_not_moved_by_an_ipv6_born_host():
    assert [message.store_timestamp_offset(f) for f in FLAGS] == [56, 68, 56, 68]
    for f in FLAGS:
        assert kernels.store_timestamp_at(1000, f) == 1000 + message.store_timestamp_offset(f)


@pytest.mark.parametrize(("born", "store"), [(V4, V4), (V6, V4), (V4, V6), (V6, V6)])
def test_store_timestamp_read_from_the_wrong_place(born, store):
    msg = message.Message(topic="T", body=b"x", born_host=born, store_host=store, born_timestamp=1700000000000,
                          store_timestamp=1700000000123).with_host_flags()
    buf = b"\0" * 5 + message.encode(msg)
    assert message.store_timestamp_at(buf, 5) == 1700000000123


def test_properties_of_32768_bytes_not_refused():
    assert not properties.too_long(32767) and properties.too_long(32768)
    assert properties.too_long(np.array([0, 32767, 32768])).tolist() == [False, False, True]
    assert properties.too_long_reason("bytes") == "over 32767 bytes"


def test_host_widths_wrong_for_their_family():
    assert (hosts.address_len(False), hosts.address_len(True)) == (4, 16)
    assert (hosts.host_len(False), hosts.host_len(True)) == (8, 20)


def test_unique_key_takes_the_wrong_bytes_of_an_ipv6_host():
    addr = np.zeros((2, 16), dtype=np.uint8)
    addr[0, :4] = np.frombuffer(V4.address, dtype=np.uint8)
    addr[1] = np.frombuffer(V6.address, dtype=np.uint8)
    parts = uniqkey.address_parts(addr, np.array([False, True]))
    assert parts.flags.c_contiguous and parts.tolist() == [[192, 0, 2, 1], [0, 0, 0, 0x17]]
    assert [uniqkey.create(h.address)[:8] for h in (V4, V6)] == [bytes(p).hex().upper() for p in parts.tolist()]


def test_batch_output_rows_fewer_than_items():
    # an item: totalSize, magic, bodyCRC, flag, bodyLength (20 bytes), an empty body, propertiesLength (2)
    assert [batchkernel.item_capacity(n) for n in (0, 21, 22, 43, 44)] == [1, 1, 2, 2, 3]


def test_walk_on_stops_at_a_window_edge_instead_of_going_on():
    """The one loop around the walker goes window by window to the walk's own end (here the blank)."""
    from rmqtool.structures.commitlog.message import Message, encode, encode_blank
    from rmqtool.structures.commitlog.walker import Rows, walk_on

    host = parse_host("10.0.0.1:10911")
    records, at = [], 0
    for i in range(10):
        rec = encode(Message(topic="T", body=b"x" * (10 + i), born_host=host, store_host=host, physical_offset=at))
        records.append(rec)
        at += len(rec)
    buf = bytearray(b"".join(records) + bytes(4096))
    buf[at : at + 8] = encode_blank(len(buf) - at)
    arr = np.frombuffer(bytes(buf), dtype=np.uint8)
    rows = Rows.room(len(buf))
    calls = list(walk_on(arr, 0, None, 0, rows, window=300))
    assert sum(c.count for c in calls) == 10
    assert all(c.window_end for c in calls[:-1]) and len(calls) > 1
    assert calls[-1].stop == at and calls[-1].blank and calls[-1].reason == "blank marker"
    assert all(calls[i + 1].start == calls[i].stop for i in range(len(calls) - 1))  # each goes on where one stopped
