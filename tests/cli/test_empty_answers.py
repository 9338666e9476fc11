"""A question that finds nothing says which part of it excluded everything (issue 26's empty-answer rule)."""

from __future__ import annotations

import json

from cli_helpers import CONF, FIXTURE, run

KEY_QUERY = ("query", FIXTURE, "--config", CONF, "--topic")


def test_a_key_query_on_a_topic_the_store_lacks_exits_3_naming_the_topics_it_has():
    out = run(*KEY_QUERY, "NoTopic", "--key", "order-3")
    assert out.returncode == 3 and out.stdout == ""
    assert out.stderr == ("rmqtool: not found: the store holds no queue of topic NoTopic (its topics: AuditLogTopic, "
                          "OrderTopic, PaymentTopic, SCHEDULE_TOPIC_XXXX)\n")


def test_begin_after_end_is_refused_not_answered_with_no_key():
    out = run(*KEY_QUERY, "OrderTopic", "--key", "order-3", "--begin", "2023-11-15", "--end", "2023-11-14")
    assert out.returncode == 2
    assert out.stderr == ("rmqtool: error: --begin 2023-11-15T00:00:00.000Z is after --end 2023-11-14T00:00:00.000Z: "
                          "no time lies between them\n")


def test_a_key_carried_only_outside_the_window_names_the_window():
    out = run(*KEY_QUERY, "OrderTopic", "--key", "order-3", "--begin", "2023-11-15", "--json")
    assert out.returncode == 0 and json.loads(out.stdout) == {"messages": []}
    assert out.stderr == ("0 messages: 1 message(s) of topic OrderTopic carry key 'order-3', stored "
                          "2023-11-14T22:13:20.021Z .. 2023-11-14T22:13:20.021Z: none between --begin "
                          "2023-11-15T00:00:00.000Z and the end of the store\n")


def test_a_key_no_message_carries_is_an_empty_list_with_the_reason():
    out = run(*KEY_QUERY, "OrderTopic", "--key", "no-such-key", "--json")
    assert out.returncode == 0 and json.loads(out.stdout) == {"messages": []}
    assert out.stderr == "0 messages: no message of topic OrderTopic carries key 'no-such-key'\n"


def test_a_key_search_that_stops_at_max_says_more_may_exist():
    out = run(*KEY_QUERY, "OrderTopic", "--key", "shared-1", "--max", "2", "--json")
    assert out.returncode == 0 and len(json.loads(out.stdout)["messages"]) == 2
    assert "stopped at --max 2 hits: more messages may carry 'shared-1' (raise --max)\n" in out.stderr
    full = run(*KEY_QUERY, "OrderTopic", "--key", "shared-1", "--json")
    assert len(json.loads(full.stdout)["messages"]) > 2 and "stopped at" not in full.stderr


def test_decode_from_an_offset_past_the_log_exits_3():
    out = run("decode", "commitlog", FIXTURE, "--config", CONF, "--phy-offset", "99999999", "--jsonl")
    assert out.returncode == 3 and out.stdout == ""
    assert out.stderr == "rmqtool: not found: no record starts at or after offset 99999999 (segments cover 0..196608)\n"


def test_decode_of_a_topic_no_record_has_exits_3():
    out = run("decode", "commitlog", FIXTURE, "--config", CONF, "--topic", "NoTopic", "--jsonl")
    assert out.returncode == 3 and out.stdout == ""
    assert out.stderr == "rmqtool: not found: none of the 420 records is of topic NoTopic\n"


def test_a_msgid_list_with_one_unknown_id_still_prints_the_one_found():
    first = json.loads(run("decode", "commitlog", FIXTURE, "--config", CONF, "--count", "1", "--jsonl").stdout)
    unknown = "C633640700002A9F0000000000FFFFFF"
    out = run("query", FIXTURE, "--config", CONF, "--msg-id", f"{first['msgId']},{unknown}", "--json")
    assert out.returncode == 3
    assert [m["commitLogOffset"] for m in json.loads(out.stdout)["messages"]] == [0]
    assert out.stderr.startswith("rmqtool: not found: ") and "16777215" in out.stderr


def test_decode_msgid_reads_a_client_msgid_instead_of_a_negative_offset():
    out = run("decode", "msgid", "C000020112340BADF00D000000000003", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"msgId": "C000020112340BADF00D000000000003", "kind": "client",
                                      "clientAddress": "192.0.2.1", "pid": 4660, "salt": 195948557,
                                      "msSinceMonthStart": 0, "counter": 3}
    positive = json.loads(run("decode", "msgid", "C000020112340BAD700D000000000003", "--json").stdout)
    assert positive["kind"] == "client" and positive["pid"] == 4660 and positive["counter"] == 3
    offset = json.loads(run("decode", "msgid", "C633640700002A9F0000000000000206", "--json").stdout)
    assert offset["kind"] == "offset" and offset["commitLogOffset"] == 0x206


def test_decode_of_no_records_asked_for_is_not_called_empty():
    out = run("decode", "commitlog", FIXTURE, "--config", CONF, "--topic", "OrderTopic", "--count", "0", "--jsonl")
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


def test_the_window_search_again_reports_its_own_limit_not_the_answers():
    out = run(*KEY_QUERY, "OrderTopic", "--key", "shared-1", "--begin", "2030-01-01", "--max", "2", "--json")
    assert out.returncode == 0 and json.loads(out.stdout) == {"messages": []}
    assert out.stderr.startswith("0 messages: 2 or more message(s) of topic OrderTopic carry key 'shared-1', stored ")
    assert "stopped at --max" not in out.stderr


def test_a_msgid_list_of_commas_alone_was_an_empty_answer():
    out = run("query", FIXTURE, "--config", CONF, "--msg-id", ",")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == "rmqtool: error: --msg-id ',' names no msgId\n"
