"""A first line far longer than any row: what a load reads of it before refusing it."""

from __future__ import annotations

import io

from rmqtool.io import sources


class _CountingReader(io.BufferedReader):
    """A file that counts the bytes read from it, whichever way they are asked for."""

    read_bytes = 0

    def read(self, size=-1):
        data = super().read(size)
        _CountingReader.read_bytes += len(data)
        return data

    def readline(self, size=-1):
        data = super().readline(size)
        _CountingReader.read_bytes += len(data)
        return data

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line


def test_a_300_mb_line_is_not_read_whole_to_learn_the_columns(tmp_path, monkeypatch):
    """`columns()` read the first line whole (`for line in f`): a 300 MB malformed line took 17-35 s and 700 MB
    before it was refused. It reads at most a row's longest line (64 MiB; 1 MiB here) and one block more."""
    monkeypatch.setattr(sources, "MAX_ROW_LINE", 1 << 20)
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"topic": "T", "body": "' + b"A" * (8 << 20) + b"\n")
    monkeypatch.setattr(sources.Source, "_open", lambda self: _CountingReader(io.FileIO(self.name)))
    _CountingReader.read_bytes = 0
    assert sources.Source(path).columns() == set()
    assert 1 << 20 < _CountingReader.read_bytes <= (2 << 20) + 4096


def test_the_columns_are_the_first_non_blank_lines(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"\n  \n" + b'{"topic": "T", "keys": "a"}\n{"tags": "x"}\n')
    assert sources.Source(path).columns() == {"topic", "keys"}
