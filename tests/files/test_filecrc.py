"""Whole-file CRC32C that skips holes must equal the CRC32C of every byte."""

import os

import crc32c
import pytest

from rmqtool.files.filecrc import extend_zeros, file_crc


@pytest.mark.parametrize("zeros", [0, 1, 7, 4096, 1 << 20])
@pytest.mark.parametrize("prefix", [b"", b"a", bytes(range(256)) * 5])
def test_extending_a_crc_by_zeros_equals_checksumming_the_zeros(prefix, zeros):
    assert extend_zeros(crc32c.crc32c(prefix), zeros) == crc32c.crc32c(prefix + bytes(zeros))


def _preallocated(path, size, writes):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.posix_fallocate(fd, 0, size)
        for at, data in writes:
            os.pwrite(fd, data, at)
    finally:
        os.close(fd)
    whole = bytearray(size)
    for at, data in writes:
        whole[at : at + len(data)] = data
    return bytes(whole)


def test_a_preallocated_file_written_in_places_checksums_as_all_its_bytes(tmp_path):
    writes = [(0, b"head" * 1000), (3 << 20, b"middle"), ((8 << 20) - 5, b"tail!")]
    whole = _preallocated(tmp_path / "f", 8 << 20, writes)
    assert file_crc(tmp_path / "f") == (8 << 20, crc32c.crc32c(whole))


def test_a_byte_written_into_the_unwritten_tail_changes_the_checksum(tmp_path):
    _preallocated(tmp_path / "f", 4 << 20, [(0, b"data")])
    before = file_crc(tmp_path / "f")
    with open(tmp_path / "f", "r+b") as f:
        f.seek(3 << 20)
        f.write(b"\x01")
    assert file_crc(tmp_path / "f") != before


def test_sparse_and_empty_files(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    assert file_crc(tmp_path / "empty") == (0, 0)
    with open(tmp_path / "sparse", "wb") as f:
        f.truncate(1 << 20)
    assert file_crc(tmp_path / "sparse") == (1 << 20, crc32c.crc32c(bytes(1 << 20)))
