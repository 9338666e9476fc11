"""A new index file is named after the newest one by one rule (`index.name_after`), which the writer's roll and
spark-load's staged files share. With a clock not later than the newest file's name (a fixed clock, as
`--store-timestamp` gives, older than the store's files), the roll added one millisecond at a time until the name
passed the newest: a store whose newest index file was named for 2026 and a clock of 1700000000000 spun for
minutes (issue 42). Each test counts the names tried, so a roll that spins fails at once instead of hanging."""

from __future__ import annotations

import numpy as np
import pytest

from rmqtool.structures import index
from rmqtool.structures.index.service import IndexService

LATE = 1_780_000_000_000  # 2026-05-28
OLD = 1_700_000_000_000  # 2023-11-14
TRIED = 8  # names a roll may try


@pytest.fixture
def counted_names(monkeypatch) -> list[int]:
    """Every time `index.file_name` formats, failing past TRIED: a spinning roll stops here."""
    tried: list[int] = []
    real = index.file_name

    def file_name(stamp: int) -> str:
        tried.append(stamp)
        assert len(tried) <= TRIED, f"{len(tried)} names tried for one index file, from {tried[0]}"
        return real(stamp)

    monkeypatch.setattr(index, "file_name", file_name)
    return tried


def _fill(service: IndexService, keys: int, first_offset: int, stamp: int) -> None:
    service.put(np.arange(1, keys + 1, dtype=np.int32), first_offset + np.arange(keys, dtype=np.int64) * 100,
                np.full(keys, stamp, dtype=np.int64))


def test_a_fixed_clock_older_than_the_newest_index_file_names_the_next_one_past_it_at_once(tmp_path, counted_names):
    late = IndexService(tmp_path, 4, 16, clock=lambda: LATE)
    _fill(late, 15, 0, LATE)  # one full file, named for 2026
    late.close()
    newest = index.file_names(tmp_path)[-1]
    counted_names.clear()
    old = IndexService(tmp_path, 4, 16, clock=lambda: OLD)
    _fill(old, 1, 1500, OLD)
    old.close()
    assert len(counted_names) <= 2  # the clock's name, then the newest's time + 1
    assert index.file_names(tmp_path) == [newest, index.file_name(index.name_time(newest) + 1)]


def test_the_name_after_the_newest_is_the_clocks_when_it_is_later():
    newest = index.file_name(OLD)
    assert index.name_after(newest, LATE) == index.file_name(LATE)
    assert index.name_after(None, OLD) == newest
    assert index.name_after(newest, OLD) == index.file_name(OLD + 1)


def test_a_name_in_use_is_passed_over():
    taken = {index.file_name(LATE), index.file_name(LATE + 1)}
    assert index.name_after(None, LATE, taken=taken.__contains__) == index.file_name(LATE + 2)
