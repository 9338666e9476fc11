"""The consume-queue file rules (`rules`): sizes and names the broker cannot load are errors, folders
it skips are warnings, and files after a queue's first file that is not full lie past its end."""

from __future__ import annotations

from pathlib import Path

from rmqtool.files.paths import offset_name, temporary_name
from rmqtool.files.segments import list_segments
from rmqtool.report import CONSUMEQUEUE, ERROR, WARNING
from rmqtool.structures.consumequeue import rules

SIZE = 400  # 20 entries a file


def queue(tmp_path: Path, files: dict[str, int]) -> Path:
    """consumequeue/T/0 holding `files` (name: size, zeros)."""
    directory = tmp_path / "consumequeue" / "T" / "0"
    directory.mkdir(parents=True)
    for name, size in files.items():
        (directory / name).write_bytes(bytes(size))
    return directory


def summary(found) -> list[tuple]:
    assert all(f.structure == CONSUMEQUEUE and f.kind in rules.KINDS for f in found)
    return [(Path(f.file).name, f.offset, f.bytes, f.severity, f.kind) for f in found]


def test_queue_file_too_long_or_cut_short_is_an_error_the_broker_refuses(tmp_path):
    d = queue(tmp_path, {offset_name(0): SIZE + 7, offset_name(SIZE): SIZE, offset_name(2 * SIZE): 100})
    found = rules.file_findings(d, SIZE)
    assert summary(found) == [(offset_name(0), 0, 7, ERROR, rules.FILE_SIZE),
                              (offset_name(2 * SIZE), 2 * SIZE, 300, ERROR, rules.FILE_SIZE)]
    assert found[0].reason == f"{SIZE + 7} bytes, not mappedFileSizeConsumeQueue={SIZE}: the broker refuses to start"


def test_queue_file_not_named_by_a_start_of_a_whole_file_is_an_error(tmp_path):
    d = queue(tmp_path, {offset_name(0): SIZE, offset_name(SIZE + 20): SIZE, "00000400": SIZE, "notes.txt": 10,
                         temporary_name(offset_name(2 * SIZE)): SIZE})
    assert summary(rules.file_findings(d, SIZE)) == [
        (offset_name(SIZE + 20), SIZE + 20, SIZE, ERROR, rules.FILE_START),
        ("00000400", 0, SIZE, ERROR, rules.FILE_NAME),
        ("notes.txt", 0, 10, ERROR, rules.FILE_NAME),
        ("notes.txt", 0, SIZE - 10, ERROR, rules.FILE_SIZE),
    ]


def test_stray_entries_beside_topic_and_queue_folders_are_warnings(tmp_path):
    queue(tmp_path, {offset_name(0): SIZE})
    root = tmp_path / "consumequeue"
    (root / "stray.bin").write_bytes(b"x")
    (root / "T" / "01").mkdir()
    (root / "T" / "retry").mkdir()
    (root / "T" / "7").write_bytes(b"")
    assert summary(rules.folder_findings(root)) == [
        ("01", 0, 0, WARNING, rules.FOLDER_NAME), ("7", 0, 0, WARNING, rules.FOLDER_NAME),
        ("retry", 0, 0, WARNING, rules.FOLDER_NAME), ("stray.bin", 0, 0, WARNING, rules.FOLDER_NAME)]


def test_files_after_a_queue_file_that_is_not_full_are_past_its_end(tmp_path):
    d = queue(tmp_path, {offset_name(0): SIZE, offset_name(SIZE): SIZE, offset_name(2 * SIZE): SIZE})
    first, *past = list_segments(d)
    found = rules.past_end_findings(first, past)
    assert summary(found) == [(offset_name(SIZE), SIZE, SIZE, ERROR, rules.FILE_PAST_END),
                              (offset_name(2 * SIZE), 2 * SIZE, SIZE, ERROR, rules.FILE_PAST_END)]
    assert found[0].reason.startswith(f"after {offset_name(0)}, which is not full")
