"""Facts a command takes from the store (the broker address, the geometry) come from the store."""

from __future__ import annotations

import json

from cli_helpers import FIXTURE, fixture_copy, run
from damage import SEG, corrupt

from rmqtool.structures.commitlog import msgid
from rmqtool.structures.commitlog.hosts import parse_host


def test_append_after_recover_of_a_zeroed_last_segment_stamps_the_newest_records_host(tmp_path):
    store = fixture_copy(tmp_path)
    corrupt(store, f"commitlog/{2 * SEG:020d}", "zero", 0, SEG)
    assert run("recover", store).returncode == 0
    out = run("append", store, "--topic", "OrderTopic", "--body", "hi", "--json")
    assert out.returncode == 0, out.stderr
    put = json.loads(out.stdout)
    assert put["wroteOffset"] == 2 * SEG
    assert msgid.decode(put["msgId"]) == (parse_host("198.51.100.7:10911"), 2 * SEG)


def test_query_key_with_a_messages_uniq_key_finds_it_and_says_uniq_key_matched():
    out = run("query", FIXTURE, "--topic", "OrderTopic", "--key", "C000020112340BADF00D000000000000", "--json")
    assert out.returncode == 0, out.stderr
    [hit] = json.loads(out.stdout)["messages"]
    assert (hit["commitLogOffset"], hit["matchedBy"]) == (0, "UNIQ_KEY")
    card = run("query", FIXTURE, "--topic", "OrderTopic", "--key", "C000020112340BADF00D000000000000")
    assert card.returncode == 0, card.stderr
    assert "matched by" in card.stdout and "UNIQ_KEY" in card.stdout


def test_query_key_with_a_keys_word_says_keys_matched_in_json_and_text():
    out = run("query", FIXTURE, "--topic", "OrderTopic", "--key", "shared-1", "--json")
    assert out.returncode == 0, out.stderr
    hits = json.loads(out.stdout)["messages"]
    assert len(hits) == 26 and {h["matchedBy"] for h in hits} == {"KEYS"}
    table = run("query", FIXTURE, "--topic", "OrderTopic", "--key", "shared-1")
    assert "key matched by KEYS in 26 messages" in table.stderr


def test_query_scan_key_with_a_uniq_key_matches_as_the_index_does():
    out = run("query", FIXTURE, "--topic", "OrderTopic", "--key", "C000020112340BADF00D000000000000", "--scan",
              "--json")
    assert out.returncode == 0, out.stderr
    assert [(h["commitLogOffset"], h["matchedBy"]) for h in json.loads(out.stdout)["messages"]] == [(0, "UNIQ_KEY")]


def test_query_key_with_a_uniq_key_on_the_5x_rocksdb_golden_finds_it(golden_v5):
    out = run("query", golden_v5 / "store", "--config", golden_v5 / "broker.conf", "--topic", "OrderTopic",
              "--key", "C000020112340BADF00D000F42400000", "--json")
    assert out.returncode == 0, out.stderr
    [hit] = json.loads(out.stdout)["messages"]
    assert (hit["commitLogOffset"], hit["matchedBy"]) == (0, "UNIQ_KEY")


def test_unique_key_query_does_not_match_a_keys_word():
    out = run("query", FIXTURE, "--topic", "OrderTopic", "--unique-key", "shared-1", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["messages"] == []
