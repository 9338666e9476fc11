"""Each chart's SVG, read back without a browser: heights and widths proportional to the numbers, gaps
empty, small topics summed, ranges placed at their share of a segment, store strings escaped."""

from __future__ import annotations

import copy

import pytest
from page_helpers import EVIL, START, Elements, sample_picture

from rmqtool.page.bars import TOP, Bar, bars
from rmqtool.page.consumers import committed_markers
from rmqtool.page.document import render
from rmqtool.page.glance import NOT_CHECKED
from rmqtool.page.index import chain_chart, histogram
from rmqtool.page.segments import COLUMNS, GAP, segment_map
from rmqtool.page.svg import WIDTH
from rmqtool.page.timeline import HEIGHT, OTHER, series, timeline_chart, timeline_table


def floats(rects: list[dict], key: str) -> list[float]:
    return [float(r[key]) for r in rects]


def test_stacked_bucket_heights_are_proportional_to_messages_and_the_gap_is_empty():
    dom = Elements(timeline_chart(sample_picture()["timeline"], "messages"))
    buckets = dom.having("g", **{"class": "bucket"})
    assert [b["data-start-ms"] for b in buckets] == [str(START), str(START + 1000), str(START + 2000)]
    segs = dom.having("rect", **{"class": "c0"}) + dom.having("rect", **{"class": "c1"})
    # 30 messages fill the height: 20 of OrderTopic, 10 of the other; the third bucket's 10 a third of it
    assert floats(segs, "height") == pytest.approx([HEIGHT * 20 / 30, HEIGHT * 10 / 30, HEIGHT * 10 / 30], abs=0.05)
    assert floats(segs, "y") == pytest.approx([HEIGHT / 3, HEIGHT * 2 / 3, 0], abs=0.05)
    gaps = dom.having("rect", **{"class": "gap"})
    assert [(g["height"], g["x"]) for g in gaps] == [(str(HEIGHT), "363.33")]  # the middle bucket, full height


def test_bytes_timeline_scales_to_the_largest_bucket_in_bytes():
    dom = Elements(timeline_chart(sample_picture()["timeline"], "bytes"))
    assert [(r["data-value"], r["height"]) for r in dom.having("rect", **{"class": "c0"})] \
        == [("2000", "146.7"), ("1500", "110")]
    assert dom.having("svg")[0]["data-largest"] == "3000"


def test_topics_beyond_the_ten_largest_are_summed_as_other():
    topics = [{"topic": f"t{i}", "messages": [20 - i, 1], "bytes": [1, 1]} for i in range(12)]
    out = series({"topics": topics}, "messages")
    assert [name for name, _ in out] == [f"t{i}" for i in range(10)] + [OTHER]
    assert out[-1][1] == [10 + 9, 2]  # t10 and t11


def test_an_empty_store_draws_no_bucket():
    """An empty store's timeline has no edges at all (`edgesMs: []`, as ops.timeline.empty_timeline)."""
    empty = {"startMs": 0, "endMs": 0, "bucketMs": 0, "edgesMs": [], "messages": [], "bytes": [], "topics": []}
    dom = Elements(timeline_chart(empty, "messages", [("billing", START)]) + timeline_table(empty))
    assert dom.having("g", **{"class": "bucket"}) == [] and dom.having("svg")[0]["data-buckets"] == "0"
    assert dom.having("g", **{"class": "committed"}) == [] and dom.having("tr")[1:] == []


def test_each_groups_marker_is_its_oldest_committed_position():
    assert committed_markers(sample_picture()["consumers"]) == [("billing", START + 500)]
    assert committed_markers(None) == []
    dom = Elements(timeline_chart(sample_picture()["timeline"], "messages", [("billing", START + 1500)]))
    path = [t for t, a in dom.tags if t == "path"]
    assert path == ["path"] and dom.having("g", data_group="billing")[0]["data-committed-ms"] == str(START + 1500)


def test_bar_widths_are_proportional_and_rows_beyond_the_top_are_one_other_row():
    rows = [Bar(f"q{i}", 100 - i) for i in range(TOP + 5)]
    dom = Elements(bars("x", rows))
    shown = dom.having("rect", **{"class": "bar"})
    assert len(shown) == TOP
    assert shown[-1]["data-label"] == "other (6)" and shown[-1]["data-value"] == "351"
    widths = {b["data-label"]: float(b["width"]) for b in shown}
    assert widths["q1"] / widths["other (6)"] == pytest.approx(99 / 351, rel=1e-3)


def test_holes_and_damage_are_drawn_at_their_share_of_the_segment():
    dom = Elements(segment_map(sample_picture()["segments"]))
    cells = dom.having("rect", **{"class": "cell"})
    assert [(c["data-name"], c["data-used"], c.get("fill-opacity")) for c in cells] \
        == [("00000000000000000000", "4096", None), ("00000000000000004096", "904", "0.31")]
    assert dom.having("svg")[0]["data-segment-size"] == "4096"
    w = WIDTH // COLUMNS - GAP
    (damaged,) = dom.having("rect", **{"class": "damaged"})
    assert float(damaged["x"]) == pytest.approx(GAP + w / 4, abs=0.01)
    assert float(damaged["width"]) == pytest.approx(w / 8, abs=0.01)
    (hole,) = dom.having("rect", **{"class": "hole"})
    assert (hole["data-lo"], hole["data-hi"], float(hole["x"])) == ("4096", "4200", pytest.approx(float(cells[1]["x"])))


def test_the_chain_histogram_sums_every_files_slots():
    idx = sample_picture()["index"]
    assert histogram(idx) == {1: 6, 2: 3, 4: 1}
    dom = Elements(chain_chart(idx))
    assert [(r["data-length"], r["data-slots"]) for r in dom.having("rect", **{"class": "bar"})] \
        == [("1", "6"), ("2", "3"), ("4", "1")]


def test_a_store_string_with_markup_is_escaped_in_text_and_attributes():
    picture = sample_picture()
    hostile = '"><img src=x onerror=alert(1)>'
    picture["consumers"]["groups"][0]["group"] = hostile
    for q in picture["consumers"]["groups"][0]["queues"]:
        q["group"] = hostile
    page = render(picture)
    assert "<img" not in page and page.count("<script") == 1 and EVIL not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&quot;&gt;&lt;img src=x" in page
    dom = Elements(page)
    assert len(dom.having("g", data_group=hostile)) == 1


def test_an_unchecked_store_says_how_to_check_it():
    dom = Elements(render(sample_picture(verified=False)))
    assert NOT_CHECKED == "not checked: run `rmqtool report --verify` (a full scan)"
    assert dom.having("p", data_findings="unchecked") and NOT_CHECKED in "".join(dom.text)
    assert dom.having("rect", **{"class": "damaged"}) == []


def test_the_findings_show_the_doctors_line_and_each_kind():
    dom = Elements(render(sample_picture()))
    assert dom.having("p", data_findings="1")
    text = "".join(dom.text)
    assert "1 problem(s) found." in text and "1 problem: `rmqtool doctor /stores/s1` cuts 512 bytes" in text
    assert "bad-crc" in text


def test_the_page_allows_no_source_outside_itself():
    page = render(sample_picture())
    assert ('<meta http-equiv="Content-Security-Policy" content="default-src &#x27;none&#x27;' in page
            or "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:" in page)
    assert "http://" not in page and "https://" not in page


def test_ten_thousand_segments_and_a_thousand_buckets_stay_under_five_megabytes():
    picture = copy.deepcopy(sample_picture())
    n = 1000
    tl = picture["timeline"]
    tl["edgesMs"] = [START + i * 1000 for i in range(n + 1)]
    tl["topics"] = [{"topic": f"topic-{k:03d}", "messages": [k + i % 7 for i in range(n)],
                     "bytes": [(k + i % 7) * 1000 for i in range(n)]} for k in range(40)]
    tl["messages"] = [sum(t["messages"][i] for t in tl["topics"]) for i in range(n)]
    tl["bytes"] = [sum(t["bytes"][i] for t in tl["topics"]) for i in range(n)]
    size = 1 << 30
    picture["segments"] = [{"name": f"{i * size:020d}", "start": i * size, "size": size, "used": size,
                            "holes": [], "damaged": []} for i in range(10_000)]
    picture["queues"] = [{"topic": f"topic-{k:03d}", "queueId": q, "minOffset": 0, "maxOffset": 10**6,
                          "messages": 10**6, "bytes": 10**9} for k in range(40) for q in range(16)]
    page = render(picture)
    assert len(page.encode()) < 5 * 1024 * 1024
    dom = Elements(page)
    assert len(dom.having("rect", **{"class": "cell"})) == 10_000
    assert len(dom.having("g", **{"class": "bucket"})) == 2 * n
