"""The one report type and its sinks: what a Reporter hands on, each sink keeps or counts exactly."""

from __future__ import annotations

from rmqtool.report import ERROR, WARNING, CollectSink, CountSink, Finding, GroupSink, PrintSink, Reporter


def _f(file: str, offset: int, kind: str, severity: str = ERROR) -> Finding:
    return Finding(file, offset, f"{kind} at {offset}", 4, severity, "commitlog", kind)


def test_every_sink_sees_every_finding_and_counts_include_the_unlisted():
    collected, counted, groups, printed = CollectSink(cap=2), CountSink(), GroupSink(), []
    reporter = Reporter(collected, counted, groups, PrintSink(printed.append))
    reporter.extend([_f("a", i, "crc-mismatch") for i in range(5)] + [_f("a", 9, "garbage-tail"),
                                                                       _f("b", 0, "abort-present", WARNING)])
    collected.close()
    assert [(f.offset, f.kind) for f in collected.findings] == [
        (0, "crc-mismatch"), (1, "crc-mismatch"), (9, "garbage-tail"), (0, "abort-present"), (1, "crc-mismatch")]
    more = collected.findings[-1]
    assert (more.reason, more.offset, more.count, more.bytes) == ("3 more like: crc-mismatch at 0", 1, 3, 12)
    # the "3 more like" row stands for all three: a count over the list is a count of everything
    assert collected.unlisted == {("crc-mismatch", ERROR): 0}
    listed = sum(f.count for f in collected.findings if f.kind == "crc-mismatch")
    assert listed == counted.counts[("crc-mismatch", ERROR)] == 5
    assert [(g.kind, g.count, g.first_offset, g.last_offset) for g in groups.groups] == [
        ("crc-mismatch", 5, 0, 4), ("garbage-tail", 1, 9, 9), ("abort-present", 1, 0, 0)]
    assert len(printed) == 7


def test_groups_never_join_two_kinds_on_one_file():
    groups = GroupSink()
    Reporter(groups).extend([_f("a", 0, "crc-mismatch"), _f("a", 300, "garbage-tail"), _f("a", 600, "crc-mismatch")])
    assert [g.kind for g in groups.groups] == ["crc-mismatch", "garbage-tail", "crc-mismatch"]
