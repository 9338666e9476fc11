"""The picture's cost against info's, measured in process on the same store."""

from __future__ import annotations

from rmqtool.bench.picture import picture_cost


def test_picture_cost_reports_both_times_and_their_ratio(fixture_store):
    cost = picture_cost(fixture_store, runs=1)
    assert set(cost) == {"infoS", "pictureS", "ratio", "peakRssBytes", "runs"}
    assert cost["runs"] == 1 and cost["infoS"] > 0 and cost["pictureS"] > 0 and cost["peakRssBytes"] > 0
    assert abs(cost["ratio"] - cost["pictureS"] / cost["infoS"]) < 0.01
