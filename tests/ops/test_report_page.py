"""write_report: the picture rendered and written whole, bad targets refused before the store is read.
`store_picture` (ops/picture.py) is stood in for by the sample picture, so the page is known exactly."""

from __future__ import annotations

import os

import pytest
from cli_helpers import FIXTURE
from page_helpers import sample_picture

from rmqtool.errors import RmqError
from rmqtool.ops import report_page
from rmqtool.ops.report_page import default_out, write_report
from rmqtool.page.document import render


@pytest.fixture
def pictured(monkeypatch):
    """`rmqtool.ops.picture.store_picture` answering the sample picture; the calls it got."""
    calls = []

    def store_picture(path, config=None, *, verify=False, buckets=None, progress=None):
        calls.append((str(path), config, verify))
        return sample_picture(verified=verify)

    monkeypatch.setattr(report_page, "store_picture", store_picture)
    return calls


def test_the_page_written_is_the_rendered_picture_and_its_size_is_reported(pictured, tmp_path):
    out = tmp_path / "r.html"
    done = write_report(FIXTURE, out, verify=True)
    page = render(sample_picture()).encode()
    assert out.read_bytes() == page
    assert done == {"store": str(FIXTURE), "out": str(out), "bytes": len(page), "verified": True, "problems": 1,
                    "buckets": 3, "topics": 2, "segments": 2}
    assert pictured == [(str(FIXTURE), None, True)]
    assert os.listdir(tmp_path) == ["r.html"]


def test_an_unverified_report_counts_no_problems(pictured, tmp_path):
    done = write_report(FIXTURE, tmp_path / "r.html")
    assert (done["verified"], done["problems"]) == (False, None)
    assert "not checked: run `rmqtool report --verify` (a full scan)" in (tmp_path / "r.html").read_text()


def test_an_older_page_is_replaced(pictured, tmp_path):
    out = tmp_path / "r.html"
    out.write_text("old")
    write_report(FIXTURE, out)
    assert out.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("target, error", [
    ("folder", "{tmp}/folder is a folder: name a file to write"),
    ("nowhere/r.html", "cannot write {tmp}/nowhere/r.html: no folder {tmp}/nowhere"),
])
def test_an_out_that_cannot_be_written_is_refused_before_the_store_is_read(pictured, tmp_path, target, error):
    (tmp_path / "folder").mkdir()
    with pytest.raises(RmqError) as e:
        write_report(FIXTURE, tmp_path / target)
    assert str(e.value) == error.format(tmp=tmp_path)
    assert pictured == []


def test_a_missing_store_is_refused(pictured, tmp_path):
    with pytest.raises(RmqError, match=r"^.*/gone: no such file or directory$"):
        write_report(tmp_path / "gone", tmp_path / "r.html")
    assert pictured == []


def test_a_render_that_fails_leaves_no_page_and_no_temporary(monkeypatch, tmp_path):
    def store_picture(path, config=None, *, verify=False, buckets=None, progress=None):
        picture = sample_picture()
        del picture["timeline"]["edgesMs"]
        return picture

    monkeypatch.setattr(report_page, "store_picture", store_picture)
    with pytest.raises(KeyError):
        write_report(FIXTURE, tmp_path / "r.html")
    assert os.listdir(tmp_path) == []


def test_the_default_page_is_named_after_the_store_in_the_working_folder(tmp_path):
    assert str(default_out(FIXTURE)) == "store-report.html"
    assert str(default_out(tmp_path / "broker-a" / ".")) == "broker-a-report.html"
