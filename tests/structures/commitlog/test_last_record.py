"""The newest record of a full segment is found back from its end marker, without walking the segment (an
empty last segment sent append to walk a whole 1 GiB segment for the store's host)."""

from __future__ import annotations

from cli_helpers import FIXTURE
from damage import SEG

from rmqtool.structures.commitlog import message

MAX_REACH = 4 << 20


def _walked_last(buf: bytes) -> tuple[int, message.Message]:
    pos, last = 0, None
    while True:
        rec = message.decode(buf, pos, verify_crc=False)
        if not isinstance(rec, message.Message):
            return pos, last
        pos, last = pos + rec.store_size, rec


def test_the_newest_record_before_each_full_segments_end_marker_is_the_walks_last():
    for start in (0, SEG):
        buf = (FIXTURE / "commitlog" / f"{start:020d}").read_bytes()
        marker, walked = _walked_last(buf)
        assert isinstance(message.decode(buf, marker), message.Blank)
        found = message.last_record_before(buf, marker, MAX_REACH)
        assert found is not None and found.physical_offset == walked.physical_offset
        assert (found.store_host, found.store_timestamp) == (walked.store_host, walked.store_timestamp)


def test_no_record_ends_where_nothing_was_written():
    assert message.last_record_before(bytes(SEG), 4096, MAX_REACH) is None
    buf = (FIXTURE / "commitlog" / f"{0:020d}").read_bytes()
    marker, _ = _walked_last(buf)
    assert message.last_record_before(buf, marker - 1, MAX_REACH) is None  # no record ends a byte early
