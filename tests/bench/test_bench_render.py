"""`bench render` measures the decode table against --jsonl on one store, in the same run."""

import json

import pytest
from cli_helpers import FIXTURE, run


def test_bench_render_reports_both_rates_and_their_ratio():
    out = run("bench", "render", str(FIXTURE), "--repeat", "1", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["mode"] == "render" and doc["messages"] == 420
    for mode in ("table", "jsonl"):
        cpu = doc[mode]["cpuSeconds"]  # rounded to ms and the rate to a whole number: both within rounding
        assert cpu > 0 and doc[mode]["messagesPerCpuSecond"] == pytest.approx(420 / cpu, rel=0.01, abs=1)
    assert doc["tableToJsonlCpu"] == pytest.approx(doc["jsonl"]["cpuSeconds"] / doc["table"]["cpuSeconds"], rel=0.01)
