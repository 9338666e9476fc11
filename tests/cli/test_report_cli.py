"""`rmqtool report`: bad input is one line and exit 2, before the store is read; the page of a real store
says what `info --json` says."""

from __future__ import annotations

import json
import re

from cli_helpers import CONF, FIXTURE, run
from page_helpers import Elements


def test_a_missing_store_is_one_line_and_exit_2(tmp_path):
    out = run("report", tmp_path / "gone", "--out", tmp_path / "r.html")
    assert (out.returncode, out.stdout, out.stderr) == (2, "", f"rmqtool: error: {tmp_path}/gone: no such file or "
                                                               "directory\n")
    assert list(tmp_path.iterdir()) == []


def test_an_out_that_is_a_folder_is_one_line_and_exit_2(tmp_path):
    out = run("report", FIXTURE, "--out", tmp_path)
    assert (out.returncode, out.stderr) == (2, f"rmqtool: error: {tmp_path} is a folder: name a file to write\n")


def test_an_out_in_a_missing_folder_is_one_line_and_exit_2(tmp_path):
    out = run("report", FIXTURE, "--out", tmp_path / "no" / "r.html")
    assert (out.returncode, out.stderr) == (2, f"rmqtool: error: cannot write {tmp_path}/no/r.html: no folder "
                                               f"{tmp_path}/no\n")


def test_the_fixture_stores_page_shows_the_numbers_info_prints(tmp_path):
    page = tmp_path / "r.html"
    out = run("report", FIXTURE, "--config", CONF, "--out", page)
    assert out.returncode == 0, out.stderr
    assert re.fullmatch(rf"{re.escape(str(page))}: {page.stat().st_size} bytes\n", out.stdout)
    info = json.loads(run("info", FIXTURE, "--config", CONF, "--json").stdout)
    dom = Elements(page.read_text())
    buckets = dom.having("g", **{"class": "bucket"})
    assert sum(int(b["data-messages"]) for b in buckets) == 2 * info["messagesInQueues"]  # both timelines
    topics = {b["data-label"]: int(b["data-value"]) for b in dom.having("rect", **{"class": "bar"})
              if "data-messages" in b and "data-queue" not in b}
    assert topics == {t["topic"]: t["bytes"] for t in info["consumeQueues"]["topics"]}
    assert len(dom.having("rect", **{"class": "cell"})) == info["commitlog"]["segments"]
