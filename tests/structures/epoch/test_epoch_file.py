"""The epoch file (`epochFileCheckpoint`) is read by the 5.x broker's rules: count, CRC, entries, and the
`.bak` when the file is missing, holds no entries or fails a check. Files are written as the broker writes them."""

from __future__ import annotations

from stores5x import write_epoch_file

from rmqtool.report import ERROR, WARNING
from rmqtool.structures import epoch
from rmqtool.structures.epoch import EpochEntry

HISTORY = [(1, 0), (2, 1000), (5, 151686)]  # its lines' CRC32 is 2392473467: the mask matters
GOOD = b"3\n244989819\n1-0\n2-1000\n5-151686\n"


def _appended(root, n=3):
    """The file after `n` appends (its .bak holds the text before the last one)."""
    for i in range(1, n + 1):
        write_epoch_file(root, HISTORY[:i])
    return root / epoch.FILE


def test_a_good_file_loads_every_epoch_ended_at_the_next_ones_start(tmp_path):
    path = _appended(tmp_path)
    assert path.read_bytes() == GOOD
    loaded = epoch.load(path)
    assert loaded.source == path and loaded.broker_starts and loaded.findings == []
    assert loaded.entries == [EpochEntry(1, 0, 1000), EpochEntry(2, 1000, 151686), EpochEntry(5, 151686, None)]
    assert (loaded.file.count, loaded.file.crc, loaded.file.entries_crc) == (3, 244989819, 244989819)


def test_the_crc_of_checkpointfiles_own_example_matches(tmp_path):
    """CheckpointFile's documentation shows entries 7-7000 and 8-8000 under CRC 773307083."""
    found = epoch.parse(b"2\n773307083\n7-7000\n8-8000\n", tmp_path / epoch.FILE)
    assert found.finding is None and found.entries == [EpochEntry(7, 7000), EpochEntry(8, 8000)]


def test_an_unmasked_crc_is_a_crc_mismatch(tmp_path):
    """The broker masks CRC32 to 31 bits: the signed int of the full CRC fails the check."""
    found = epoch.parse(b"3\n-1902493829\n1-0\n2-1000\n5-151686\n", tmp_path / epoch.FILE)
    assert (found.finding.kind, found.finding.offset, found.finding.bytes) == (epoch.CRC_MISMATCH, 14, 20)


def test_a_crc_line_past_the_int_range_stops_the_broker(tmp_path):
    found = epoch.parse(b"3\n2392473467\n1-0\n2-1000\n5-151686\n", tmp_path / epoch.FILE)
    assert (found.finding.kind, found.finding.offset, found.finding.bytes) == (epoch.NOT_A_NUMBER, 2, 10)
    assert found.stops_broker


def test_a_crc_mismatch_is_reported_and_the_bak_is_loaded(tmp_path):
    path = _appended(tmp_path)
    path.write_bytes(GOOD.replace(b"5-151686", b"5-151687"))
    loaded = epoch.load(path)
    assert loaded.source.name == "epochFileCheckpoint.bak" and loaded.broker_starts
    assert loaded.entries == [EpochEntry(1, 0, 1000), EpochEntry(2, 1000, None)]
    [f] = loaded.findings
    assert (f.kind, f.severity, f.file, f.offset, f.bytes) == (epoch.CRC_MISMATCH, ERROR, str(path), 12, 20)
    assert f.reason == "line 2 says CRC 244989819, the entry lines' CRC is 394333754"


def test_a_count_line_that_does_not_match_the_entries_is_reported_and_the_bak_is_loaded(tmp_path):
    _appended(tmp_path, 2)
    path = tmp_path / epoch.FILE
    write_epoch_file(tmp_path, HISTORY, count=4)
    loaded = epoch.load(path)
    assert loaded.source.name == "epochFileCheckpoint.bak"
    assert [e.epoch for e in loaded.entries] == [1, 2]
    [f] = loaded.findings
    assert (f.kind, f.offset, f.bytes, f.reason) == (epoch.COUNT_MISMATCH, 0, 1, "line 1 says 4 entries, "
                                                                                  "the file holds 3")


def test_a_missing_file_loads_its_bak_without_a_finding(tmp_path):
    path = _appended(tmp_path)
    path.unlink()
    loaded = epoch.load(path)
    assert loaded.source.name == "epochFileCheckpoint.bak" and loaded.findings == []
    assert [(e.epoch, e.startOffset, e.endOffset) for e in loaded.entries] == [(1, 0, 1000), (2, 1000, None)]
    assert not loaded.file.present and epoch.load_store(tmp_path).source == loaded.source


def test_crc_zero_is_not_checked(tmp_path):
    path = tmp_path / epoch.FILE
    write_epoch_file(tmp_path, HISTORY, crc=0)
    loaded = epoch.load(path)
    assert loaded.source == path and loaded.findings == [] and len(loaded.entries) == 3
    assert loaded.file.to_json()["crcChecked"] is False and loaded.file.entries_crc == 244989819


def test_an_empty_file_stops_the_broker_instead_of_falling_back(tmp_path):
    """The count line is parsed before anything is checked: a missing one is not an I/O error to the broker."""
    path = _appended(tmp_path)
    path.write_bytes(b"")
    loaded = epoch.load(path)
    assert (loaded.broker_starts, loaded.source, loaded.entries) == (False, None, [])
    assert [(f.kind, f.offset, f.bytes) for f in loaded.findings] == [(epoch.NOT_A_NUMBER, 0, 0)]


def test_an_entry_that_is_not_int_long_stops_the_broker(tmp_path):
    found = epoch.parse(b"1\n0\n1-0 \n", tmp_path / epoch.FILE)
    assert (found.finding.kind, found.finding.offset, found.finding.bytes) == (epoch.NOT_A_NUMBER, 4, 4)


def test_lines_not_of_two_parts_are_passed_over_but_covered_by_the_crc(tmp_path):
    """Java's split drops empty parts at the end: `2-1000-` is an entry, `junk` and `-3-5` are not."""
    found = epoch.parse(b"2\n2032801051\n1-0\njunk\n2-1000-\n-3-5\n", tmp_path / epoch.FILE)
    assert found.finding is None and found.passed_over == [17, 30]
    assert found.entries == [EpochEntry(1, 0), EpochEntry(2, 1000)]


def test_bytes_that_are_not_utf8_fall_back_to_the_bak(tmp_path):
    path = _appended(tmp_path)
    path.write_bytes(GOOD.replace(b"2-1000", b"2-10\xff0"))
    loaded = epoch.load(path)
    assert loaded.source.name == "epochFileCheckpoint.bak"
    assert [(f.kind, f.offset, f.bytes) for f in loaded.findings] == [(epoch.UNREADABLE, 20, 1)]


def test_a_damaged_bak_behind_a_good_file_is_a_warning(tmp_path):
    path = _appended(tmp_path)
    bak = tmp_path / "epochFileCheckpoint.bak"
    bak.write_bytes(bak.read_bytes().replace(b"2-1000", b"2-1001"))
    loaded = epoch.load(path)
    assert loaded.source == path and len(loaded.entries) == 3
    assert [(f.kind, f.severity, f.file) for f in loaded.findings] == [(epoch.CRC_MISMATCH, WARNING, str(bak))]


def test_a_damaged_file_and_bak_leave_the_broker_without_epochs(tmp_path):
    path = _appended(tmp_path)
    write_epoch_file(tmp_path, HISTORY, crc=1)  # the .bak gets the good text: damage it too
    bak = tmp_path / "epochFileCheckpoint.bak"
    bak.write_bytes(bak.read_bytes().replace(b"3\n", b"2\n", 1))
    loaded = epoch.load(path)
    assert (loaded.source, loaded.entries, loaded.broker_starts) == (None, [], True)
    assert [(f.kind, f.severity) for f in loaded.findings] == [(epoch.CRC_MISMATCH, ERROR),
                                                               (epoch.COUNT_MISMATCH, ERROR)]


def test_a_store_without_the_files_has_no_epochs(tmp_path):
    assert epoch.load_store(tmp_path) is None


def test_the_consistent_point_is_the_end_of_the_newest_shared_epoch():
    master = [EpochEntry(1, 0, 100), EpochEntry(2, 100, 200), EpochEntry(3, 200)]
    slave = [EpochEntry(1, 0, 100), EpochEntry(2, 100)]
    assert epoch.consistent_point(slave, 250, master, 300) == 200
    assert epoch.consistent_point(master, 300, slave, 250) == 200
    assert epoch.consistent_point(slave, 150, master, 300) == 150
    assert epoch.consistent_point([EpochEntry(2, 150)], 250, master, 300) == -1
