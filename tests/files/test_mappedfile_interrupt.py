"""A new mapped file is made under a temporary name and renamed when whole: an interrupt at any point of
that leaves neither name behind."""

from __future__ import annotations

import os
import types

import pytest

from rmqtool.files import mappedfile


@pytest.mark.parametrize("after", ["open", "ftruncate", "rename"])
def test_an_interrupt_as_a_file_was_made_left_its_temporary_name(tmp_path, monkeypatch, after):
    def interrupted(real):
        def call(*args, **kwargs):  # the call is done, and a signal arrives as it returns
            done = real(*args, **kwargs)
            if after == "open":
                opened.append(done)
            raise KeyboardInterrupt
        return call

    opened: list[int] = []
    fake = types.SimpleNamespace(**{name: getattr(os, name) for name in dir(os) if not name.startswith("__")})
    setattr(fake, after, interrupted(getattr(os, after)))
    monkeypatch.setattr(mappedfile, "os", fake)
    path = tmp_path / f"{0:020d}"
    with pytest.raises(KeyboardInterrupt):
        mappedfile.MappedFile(path, 4096, create=True)
    monkeypatch.undo()
    for fd in opened:  # the descriptor an interrupt right after open() could not know
        os.close(fd)
    assert sorted(p.name for p in tmp_path.iterdir()) == ([path.name] if after == "rename" else [])
