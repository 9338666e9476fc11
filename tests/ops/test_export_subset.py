"""`export --topic/--begin/--end`: a subset through the one read path, and back in byte for byte where offsets allow."""

from __future__ import annotations

import json

from cli_helpers import run


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_topic_and_time_range_export_holds_exactly_those_messages(golden_basic, golden_expected):
    times = sorted(m["storeTimestamp"] for m in golden_expected["messages"])
    begin, end = times[300], times[900]
    out = run("export", golden_basic / "store", "--topic", "PaymentTopic", "--begin", begin, "--end", end)
    assert out.returncode == 0, out.stderr
    want = [m["commitLogOffset"] for m in golden_expected["messages"]
            if m["topic"] == "PaymentTopic" and begin <= m["storeTimestamp"] <= end]
    assert [m["commitLogOffset"] for m in _lines(out.stdout)] == want and len(want) > 50


def test_an_iso_range_selects_like_epoch_ms(golden_basic, golden_expected):
    from datetime import datetime, timezone

    first = min(m["storeTimestamp"] for m in golden_expected["messages"])
    second = (first // 1000 + 1) * 1000  # the next whole second
    iso = datetime.fromtimestamp(second / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    by_iso = run("export", golden_basic / "store", "--end", iso)
    by_ms = run("export", golden_basic / "store", "--end", second)
    assert by_iso.stdout == by_ms.stdout
    assert len(_lines(by_ms.stdout)) == sum(m["storeTimestamp"] <= second for m in golden_expected["messages"])


def test_a_time_prefix_export_imports_and_exports_again_byte_for_byte(golden_basic, golden_expected, tmp_path):
    times = sorted(m["storeTimestamp"] for m in golden_expected["messages"])
    end = times[len(times) // 2]
    prefix = tmp_path / "prefix.jsonl"
    assert run("export", golden_basic / "store", "--end", end, "--out", prefix).returncode == 0
    store = tmp_path / "copy"
    out = run("import", store, prefix, "--config", golden_basic / "broker.conf")
    assert out.returncode == 0, out.stderr
    again = run("export", store)
    assert again.stdout == prefix.read_text()


def test_a_topic_subset_with_gaps_is_refused_by_import_and_writes_nothing(golden_basic, tmp_path):
    subset = tmp_path / "orders.jsonl"
    assert run("export", golden_basic / "store", "--topic", "OrderTopic", "--out", subset).returncode == 0
    out = run("import", tmp_path / "new", subset, "--config", golden_basic / "broker.conf")
    assert out.returncode == 2 and "is not the write position" in out.stderr
    assert not (tmp_path / "new" / "commitlog").exists() or not any((tmp_path / "new" / "commitlog").iterdir())


def test_begin_after_end_is_refused(golden_basic):
    out = run("export", golden_basic / "store", "--begin", "2026-11-25", "--end", "2026-11-24")
    assert out.returncode == 2
    assert "--begin 2026-11-25T00:00:00.000Z is after --end 2026-11-24T00:00:00.000Z" in out.stderr
