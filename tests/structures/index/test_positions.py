"""Where an index file's slots, entries and header sit, stated once in `structures.index` and used by
the writer, the kernels, verify, recovery, query and clean alike."""

from __future__ import annotations

import mmap

import pytest
from cli_helpers import FIXTURE

from rmqtool.structures import index
from rmqtool.structures.index import chain, kernel
from rmqtool.structures.index.check import entry_finding

NEWEST = FIXTURE / "index" / "20231114221320002"  # 64 slots, 256 entries; indexCount 219


def test_entry_positions_of_a_64_slot_file():
    assert index.slot_position(0) == 40 and index.slot_position(18) == 40 + 18 * 4
    assert index.entries_offset(64) == 40 + 64 * 4 == 296
    assert index.entry_position(64, 0) == 296 and index.entry_position(64, 118) == 296 + 118 * 20
    assert index.file_len(64, 256) == index.entry_position(64, 256) == 5416 == NEWEST.stat().st_size
    assert index.entries_offset(5_000_000) == 20_000_040  # the broker's default geometry


def test_compiled_positions_agree_with_layout():
    """The put kernel compiles the layout's own functions: same answers as their Python selves."""
    for n in (0, 1, 63, 64, 5_000_000):
        assert kernel._entries_offset(n) == index.entries_offset(n)
        assert kernel._slot_position(n) == index.slot_position(n)


def test_entry_finding_covers_its_entry():
    f = entry_finding("idx", 64, 3, "why", "index-entry-stale", "warning")
    assert (f.offset, f.bytes, f.severity, f.structure, f.kind) == (296 + 3 * 20, 20, "warning", "index",
                                                                    "index-entry-stale")


def test_header_of_short_buffer_is_none():
    assert index.header_of(bytes(39)) is None
    assert index.header_of(bytes(40))["indexCount"] == 0
    with pytest.raises(ValueError, match="40 bytes, not 39"):
        index.put_header(bytearray(100), bytes(39))  # a bytearray would silently shrink


def test_header_outlives_its_closed_map():
    with open(NEWEST, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        head = index.header_of(buf)
    assert (int(head["indexCount"]), int(head["endPhyOffset"])) == (219, 151493)
    assert index.read_header(NEWEST).tolist() == head.tolist()
    assert index.header_bytes(NEWEST.read_bytes()) == NEWEST.read_bytes()[:40]


def test_header_fields_of_cut_header_read_as_zeros():
    raw = NEWEST.read_bytes()
    assert chain.header_fields(chain.buffer_reader(raw)) == tuple(index.read_header(NEWEST).tolist())
    assert chain.header_fields(chain.buffer_reader(raw[:16])) == (*index.decode_header(raw).tolist()[:2], 0, 0, 0, 0)
