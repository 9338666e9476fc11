"""The report page in a real browser: Debian's headless `chromium` lays it out (every chart marked
`data-rendered="1"` by the page's script, its numbers readable from the DOM), logs nothing to the console,
runs no script a store's string smuggles in, and asks the network for nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_helpers import CONF, FIXTURE, RUN_GUARD_S, run
from page_helpers import EVIL, Elements, sample_picture

from rmqtool.page.document import render

CHROMIUM = shutil.which("chromium")
CHARTS = 10  # two timelines, bytes per topic and per queue, disk use and its topics, segments, consumer lag, index
# fill and chains
# no background traffic of the browser, and no name resolves: nothing can reach a network whatever the page does
QUIET = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
         "--no-pings", "--host-resolver-rules=MAP * ~NOTFOUND"]


@pytest.fixture(scope="module", autouse=True)
def installed():
    """Skip only where chromium cannot be installed: a root with apt-get (CI, .ci/run) fails instead."""
    if CHROMIUM is not None:
        return
    if shutil.which("apt-get") and os.geteuid() == 0:
        pytest.fail("no `chromium` on PATH: install Debian's package (`apt-get install -y chromium`, as .ci/run does)")
    pytest.skip("no `chromium` on PATH, and no apt-get run as root to install Debian's package `chromium`")


def chromium(tmp: Path, page: Path, *args: str) -> subprocess.CompletedProcess:
    """One headless chromium on `page` with its own profile in `tmp`, console and net log on."""
    return subprocess.run([CHROMIUM, *QUIET, f"--user-data-dir={tmp / 'profile'}", "--enable-logging=stderr",
                           "--v=0", f"--log-net-log={tmp / 'net.json'}", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=RUN_GUARD_S)


def console(stderr: str) -> list[str]:
    """The page's console messages in chromium's log."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def page_requests(net_log: Path) -> set[str]:
    """Every URL a page of a file:// site asked for (the browser's own requests have another site)."""
    doc = json.loads(net_log.read_text())
    start = doc["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return {e["params"]["url"] for e in doc["events"] if e["type"] == start
            and "file://" in e["params"].get("network_isolation_key", "") + e["params"].get("site_for_cookies", "")}


@pytest.fixture(scope="module")
def opened(tmp_path_factory):
    """The sample picture's page, its DOM after the script ran, chromium's stderr and the page's requests."""
    tmp = tmp_path_factory.mktemp("browser")
    page = tmp / "report.html"
    page.write_text(render(sample_picture()), encoding="utf-8")
    done = chromium(tmp, page, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    return page, Elements(done.stdout), done.stderr, page_requests(tmp / "net.json")


def test_every_chart_is_laid_out_by_the_browser(opened):
    _, dom, _, _ = opened
    charts = dom.having("svg", **{"class": "chart"})
    assert len(charts) == CHARTS
    assert [c["data-chart"] for c in charts if c.get("data-rendered") != "1"] == []
    assert all(int(c["data-width"]) > 0 and int(c["data-height"]) > 0 for c in charts)


def test_the_timeline_buckets_read_back_with_the_gap_empty(opened):
    _, dom, _, _ = opened
    buckets = dom.having("g", **{"class": "bucket"})
    assert [(b["data-messages"], b["data-bytes"]) for b in buckets] == [("30", "3000"), ("0", "0"), ("10", "1500")] * 2
    assert [s["data-value"] for s in dom.having("rect", **{"class": "c0"})] == ["20", "10", "2000", "1500"]
    assert [s["data-value"] for s in dom.having("rect", **{"class": "c1"})] == ["10", "1000"]
    assert [(li["data-k"], li["data-topic"]) for li in dom.having("li")] == [("0", "OrderTopic"), ("1", EVIL)] * 2
    assert len(dom.having("rect", **{"class": "gap"})) == 2  # the middle bucket of both timelines


def test_the_bars_read_back_as_the_picture_says(opened):
    _, dom, _, _ = opened
    assert [(b["data-label"], b["data-value"]) for b in dom.having("rect", **{"class": "bar"}) if "data-max" in b] \
        == [("20231114221320000", "31"), ("20231114221322000", "14")]
    assert [b["data-value"] for b in dom.having("rect", data_group="billing")] == ["8", "4"]
    assert [(c["data-group"], c["data-committed-ms"]) for c in dom.having("g", **{"class": "committed"})] \
        == [("billing", "1700000000500")]
    assert [c["data-used"] for c in dom.having("rect", **{"class": "cell"})] == ["4096", "904"]
    assert [(d["data-lo"], d["data-hi"], d["data-kind"]) for d in dom.having("rect", **{"class": "damaged"})] \
        == [("1024", "1536", "bad-crc")]


def test_a_topic_named_like_a_script_is_shown_as_text_and_never_runs(opened):
    page, dom, stderr, _ = opened
    assert page.read_text().count("<script") == 1  # the page's own
    assert sum(1 for t, _ in dom.tags if t == "script") == 1
    assert EVIL in "".join(dom.text)
    assert dom.having("rect", data_topic=EVIL)  # its queue's bar
    assert console(stderr) == []


def test_the_page_writes_nothing_to_the_console(opened):
    assert console(opened[2]) == []


def test_no_request_leaves_the_page(opened):
    page, _, _, requests = opened
    assert requests <= {page.as_uri()}


def test_the_request_check_sees_a_page_that_fetches_an_image(tmp_path):
    """The check above is not blind: a page without the policy that loads an image is caught."""
    page = tmp_path / "leaky.html"
    page.write_text('<!DOCTYPE html><html><body><img src="http://example.invalid/x.png"></body></html>')
    chromium(tmp_path, page, "--dump-dom")
    assert page_requests(tmp_path / "net.json") == {"http://example.invalid/x.png"}


def test_the_policy_blocks_an_image_and_the_console_says_so(tmp_path):
    """With the page's Content-Security-Policy the same image is refused before any request, and logged."""
    page = tmp_path / "blocked.html"
    head = render(sample_picture()).split("<style>")[0]
    page.write_text(f'{head}</head><body><img src="http://example.invalid/x.png"></body></html>')
    done = chromium(tmp_path, page, "--dump-dom")
    assert page_requests(tmp_path / "net.json") == set()
    assert any("Content Security Policy" in line for line in console(done.stderr))


def test_a_screenshot_of_the_page_is_a_png_of_the_window(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render(sample_picture(verified=False)), encoding="utf-8")
    shot = tmp_path / "shot.png"
    done = chromium(tmp_path, page, f"--screenshot={shot}", "--window-size=1280,2400", "--hide-scrollbars")
    assert done.returncode == 0, done.stderr[-2000:]
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")) == (1280, 2400)


def charts(dom: Elements) -> dict[str, list[tuple[str, dict]]]:
    """The tags of each chart (its `<svg data-chart>` up to the next chart's), by the chart's name."""
    out: dict[str, list[tuple[str, dict]]] = {}
    current: list | None = None
    for tag, a in dom.tags:
        if tag == "svg" and a.get("class") == "chart":
            current = out.setdefault(a["data-chart"], [])
        if current is not None:
            current.append((tag, a))
    return out


def stacks(tags: list[tuple[str, dict]]) -> dict[str, list[int]]:
    """A timeline chart's per-topic values per bucket, read from its rects and its legend."""
    names = {a["data-k"]: a["data-topic"] for tag, a in tags if tag == "li"}
    buckets = [a for tag, a in tags if tag == "g" and a.get("class") == "bucket"]
    out = {name: [0] * len(buckets) for name in names.values()}
    at = -1
    for tag, a in tags:
        if tag == "g" and a.get("class") == "bucket":
            at += 1
        elif tag == "rect" and (a.get("class") or "")[1:].isdigit():
            out[names[a["class"][1:]]][at] = int(a["data-value"])
    return out


@pytest.fixture(scope="module")
def golden_page(tmp_path_factory, golden_consumed, golden_basic):
    """golden/basic with consumer offsets (copied to tmp) reported and laid out by chromium: (the charts' tags,
    chromium's stderr, the page's requests, the page, `info --json`, `consumers --json`)."""
    tmp = tmp_path_factory.mktemp("golden-page")
    conf = golden_basic / "broker.conf"
    page = tmp / "golden-report.html"
    out = run("report", golden_consumed, "--config", conf, "--out", page)
    assert out.returncode == 0, out.stderr
    done = chromium(tmp, page, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    info = json.loads(run("info", golden_consumed, "--config", conf, "--json").stdout)
    lag = json.loads(run("consumers", golden_consumed, "--config", conf, "--json").stdout)
    return charts(Elements(done.stdout)), done.stderr, page_requests(tmp / "net.json"), page, info, lag


def test_a_store_with_consumer_offsets_has_every_chart_laid_out_quietly_asking_for_nothing(golden_page):
    drawn, stderr, requests, page, _, _ = golden_page
    svgs = [tags[0][1] for tags in drawn.values()]
    assert list(drawn) == ["timeline-messages", "timeline-bytes", "bytes-topic", "bytes-queue", "disk", "disk-topics",
                           "segments", "consumers-lag", "index-fill", "index-chains"]
    assert len(svgs) == CHARTS and all(c.get("data-rendered") == "1" for c in svgs)
    assert console(stderr) == []
    assert requests <= {page.as_uri()}


def test_a_store_without_consumer_offsets_draws_the_other_seven_charts_and_says_why(tmp_path):
    page = tmp_path / "fixture-report.html"
    out = run("report", FIXTURE, "--config", CONF, "--out", page)
    assert out.returncode == 0, out.stderr
    done = chromium(tmp_path, page, "--dump-dom")
    dom = Elements(done.stdout)
    drawn = charts(dom)
    assert "consumers-lag" not in drawn and len(drawn) == CHARTS - 1
    assert all(tags[0][1].get("data-rendered") == "1" for tags in drawn.values())
    assert dom.having("p", data_chart_absent="consumers")
    assert "no consumer offsets in this store (config/consumerOffset.json)" in "".join(dom.text)
    assert console(done.stderr) == []
    assert page_requests(tmp_path / "net.json") <= {page.as_uri()}


def test_the_timelines_in_the_browser_are_infos_per_bucket_and_per_topic(golden_page):
    drawn, _, _, _, info, _ = golden_page
    timeline = info["timeline"]
    for metric in ("messages", "bytes"):
        tags = drawn[f"timeline-{metric}"]
        buckets = [a for tag, a in tags if tag == "g" and a.get("class") == "bucket"]
        assert [int(b["data-messages"]) for b in buckets] == timeline["messages"]
        assert [int(b["data-bytes"]) for b in buckets] == timeline["bytes"]
        assert [int(b["data-start-ms"]) for b in buckets] + [int(buckets[-1]["data-end-ms"])] == timeline["edgesMs"]
        assert stacks(tags) == {t["topic"]: t[metric] for t in timeline["topics"]}
    assert sum(timeline["messages"]) == info["messagesInQueues"] == 1500


def test_the_bytes_in_the_browser_are_infos_per_topic_and_per_queue(golden_page):
    drawn, _, _, _, info, _ = golden_page
    topics = info["consumeQueues"]["topics"]
    bars = [a for tag, a in drawn["bytes-topic"] if tag == "rect" and a.get("class") == "bar"]
    assert {b["data-label"]: (int(b["data-messages"]), int(b["data-value"])) for b in bars} \
        == {t["topic"]: (t["messages"], t["bytes"]) for t in topics}
    queues = [a for tag, a in drawn["bytes-queue"] if tag == "rect" and a.get("class") == "bar"]
    assert {(q["data-topic"], int(q["data-queue"])): int(q["data-messages"]) for q in queues} \
        == {(t["topic"], q["queueId"]): q["maxOffset"] - q["minOffset"] for t in topics for q in t["queues"]}
    per_topic: dict[str, int] = {}
    for q in queues:
        per_topic[q["data-topic"]] = per_topic.get(q["data-topic"], 0) + int(q["data-value"])
    assert per_topic == {t["topic"]: t["bytes"] for t in topics}


def test_the_disk_use_in_the_browser_is_infos_per_structure_and_per_topic(golden_page):
    drawn, _, _, _, info, _ = golden_page
    disk = info["disk"]
    bars = [a for tag, a in drawn["disk"] if tag == "rect" and a.get("class") == "bar"]
    assert {b["data-label"]: (int(b["data-value"]), int(b["data-apparent"]), int(b["data-files"])) for b in bars} \
        == {p["name"]: (p["allocatedBytes"], p["apparentBytes"], p["files"]) for p in disk["parts"]}
    names = {b["data-label"] for b in bars}
    assert {"commitlog", "consumequeue", "index", "checkpoint", "config", "store files"} <= names
    share = disk["commitlogTopics"]
    topics = [a for tag, a in drawn["disk-topics"] if tag == "rect" and a.get("class") == "bar"]
    assert {t["data-label"]: int(t["data-value"]) for t in topics} == {
        **{t["topic"]: t["bytes"] for t in share["topics"]}, "no queue entry": share["unattributedBytes"]}
    assert sum(int(t["data-value"]) for t in topics) == share["logDataBytes"]


def test_the_segments_and_index_files_in_the_browser_are_infos(golden_page):
    drawn, _, _, _, info, _ = golden_page
    cells = [a for tag, a in drawn["segments"] if tag == "rect" and a.get("class") == "cell"]
    assert len(cells) == info["commitlog"]["segments"] == 18
    assert sum(int(c["data-used"]) for c in cells) == info["commitlog"]["endOffset"] - info["commitlog"]["firstOffset"]
    fill = [a for tag, a in drawn["index-fill"] if tag == "rect" and a.get("class") == "bar"]
    assert (len(fill), sum(int(f["data-value"]) for f in fill)) == (info["index"]["files"], info["index"]["entries"])


def test_the_lag_in_the_browser_is_consumers_per_group_and_queue(golden_page):
    drawn, _, _, _, _, lag = golden_page
    bars = [a for tag, a in drawn["consumers-lag"] if tag == "rect" and a.get("class") == "bar"]
    assert {(b["data-group"], b["data-topic"], int(b["data-queue"])): int(b["data-value"]) for b in bars} \
        == {(q["group"], q["topic"], q["queueId"]): q["lag"] for g in lag["groups"] for q in g["queues"]
            if q["lag"] is not None}
    markers = [a for tag, a in drawn["timeline-messages"] if tag == "g" and a.get("class") == "committed"]
    assert [m["data-group"] for m in markers] == [g["group"] for g in lag["groups"]]
