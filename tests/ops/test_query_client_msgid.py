"""A producer's msgId (SendResult.msgId, the UNIQ_KEY) given to --msg-id is found through the index."""

from __future__ import annotations

import json

from cli_helpers import CONF, FIXTURE, run


def test_a_client_msgid_finds_the_message_that_carries_it():
    records = [json.loads(line) for line in run("decode", "commitlog", FIXTURE, "--config", CONF,
                                                "--jsonl").stdout.splitlines()]
    target = next(m for m in records[100:] if m["properties"].get("UNIQ_KEY") and m["topic"] != "SCHEDULE_TOPIC_XXXX")
    for given in (target["properties"]["UNIQ_KEY"], target["properties"]["UNIQ_KEY"].lower()):
        out = run("query", FIXTURE, "--config", CONF, "--msg-id", given, "--json")
        assert out.returncode == 0, out.stderr
        (m,) = json.loads(out.stdout)["messages"]
        assert (m["commitLogOffset"], m["msgId"]) == (target["commitLogOffset"], target["msgId"])


def test_an_unknown_client_msgid_says_what_to_pass():
    out = run("query", FIXTURE, "--config", CONF, "--msg-id", "C0A8000100002A9F0000000000ABCDEF")
    assert out.returncode == 3 and out.stderr.count("\n") == 1
    assert "is not an offset msgId of this store" in out.stderr
    assert "--unique-key C0A8000100002A9F0000000000ABCDEF --scan (every topic's messages)" in out.stderr
