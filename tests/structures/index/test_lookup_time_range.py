"""Which index files a lookup by key searches: a file timed [begin, end] is searched when the lookup's range
overlaps it, and skipped otherwise (the broker's IndexService.queryOffset)."""

from __future__ import annotations

import pytest

from rmqtool.structures.index.lookup import overlaps

FILE = (1000, 2000)  # beginTimestamp, endTimestamp


@pytest.mark.parametrize(("begin", "end", "searched"), [
    (0, 999, False),  # all before the file
    (2001, 3000, False),  # all after it
    (0, 1000, True),  # its end touches the file's begin
    (1500, 1600, True),  # inside it
    (1500, 3000, True),  # its begin inside
    (0, 3000, True),  # the file inside the lookup
    (2000, 3000, True),  # its begin touches the file's end
])
def test_a_file_outside_the_lookup_time_range_is_not_searched(begin, end, searched):
    assert overlaps(*FILE, begin, end) is searched
