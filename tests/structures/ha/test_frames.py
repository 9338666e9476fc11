"""The HA wire codec: frames and reports split at every byte, the first-transfer and frame-size rules."""

from __future__ import annotations

import struct

import pytest

from rmqtool.structures import ha


def _receive(reader: ha.FrameReader, data: bytes) -> None:
    """`data` read into the reader as a socket's recv_into fills it: as much as each space() holds."""
    while data:
        with reader.space() as room:
            n = min(len(room), len(data))
            room[:n] = data[:n]
        reader.wrote(n)
        data = data[n:]


def test_frames_split_at_every_byte_come_out_whole_and_in_order():
    stream = (ha.encode_header(196608, 0) + ha.encode_header(196608, 5) + b"abcde"
              + ha.encode_header(196613, 3) + b"xyz")
    for cut in range(len(stream) + 1):
        reader = ha.FrameReader()
        got = []
        for part in (stream[:cut], stream[cut:]):
            _receive(reader, part)
            for offset, body in reader.frames():
                got.append((offset, bytes(body)))
                body.release()
        assert got == [(196608, b""), (196608, b"abcde"), (196613, b"xyz")], cut
        assert reader.pending == 0


def test_a_frame_larger_than_the_buffer_grows_it_and_comes_out_whole():
    body = bytes(range(256)) * 1024  # 256 KiB into a 64 KiB reader
    reader = ha.FrameReader(capacity=64 << 10)
    _receive(reader, ha.encode_header(0, len(body)))
    assert list(reader.frames()) == []
    _receive(reader, body)
    got = [(offset, bytes(b)) for offset, b in reader.frames()]
    assert got == [(0, body)] and reader.pending == 0


def test_frame_with_negative_size_is_refused():
    reader = ha.FrameReader()
    _receive(reader, struct.pack(">qi", 0, -1))
    with pytest.raises(ValueError, match="declares -1 bytes"):
        list(reader.frames())


def test_master_reads_only_the_newest_complete_report():
    reports = ha.ReportReader()
    two_and_a_half = ha.encode_report(100) + ha.encode_report(200) + ha.encode_report(300)[:4]
    assert reports.feed(two_and_a_half) == 200
    assert reports.feed(b"") is None
    assert reports.feed(ha.encode_report(300)[4:]) == 300


@pytest.mark.parametrize(("reported", "master_max", "start"), [
    (0, 249824, 196608),  # an empty slave starts at the master's last segment
    (0, 0, 0),
    (0, 196608, 196608),
    (324301, 378966, 324301),  # any other from exactly its offset
])
def test_first_transfer_starts_where_the_broker_starts(reported, master_max, start):
    assert ha.first_transfer(reported, master_max, 65536) == start


@pytest.mark.parametrize(("offset", "end", "size"), [
    (196608, 249824, 32768),  # batch-limited
    (229376, 249824, 20448),  # to the written end
    (324301, 378966, 3379),  # never across a segment
    (327680, 327680, 0),  # nothing to send
])
def test_frame_size_keeps_to_batch_segment_and_written_end(offset, end, size):
    assert ha.frame_size(offset, end, 65536, 32768) == size


def test_slave_takes_a_frame_only_at_its_end_unless_empty():
    assert ha.follows(0, 196608) and ha.follows(324301, 324301)
    assert not ha.follows(324301, 249824)
