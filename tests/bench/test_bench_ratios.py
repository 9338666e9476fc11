"""The ratios `bench spark-load` reports, from each run's messages and seconds: no Spark needed."""

from __future__ import annotations

from rmqtool.bench.sparkload import speed_ratios


def test_a_run_slower_than_one_message_a_second_is_a_ratio_not_a_zero_division():
    timed = {"import-parquet": (1, 2.5), "spark-load-local[1]": (1, 4.0), "spark-load-local[2]": (1, 2.0)}
    assert speed_ratios(timed, ["local[1]", "local[2]"]) == {
        "local2OverLocal1": 2.0, "local[1]OverImport": 0.62, "local[2]OverImport": 1.25}


def test_a_run_that_took_no_measurable_time_is_null():
    timed = {"import-parquet": (1000, 0.0), "spark-load-local[2]": (1000, 0.5)}
    assert speed_ratios(timed, ["local[2]"]) == {"local[2]OverImport": None}
