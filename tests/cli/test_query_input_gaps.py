"""Issue 42's input gaps and misleading answers of `query` and `decode msgid`: an empty key, a msgId with spaces,
a negative queue id, and a queue offset whose record lies in the part of the log a truncated segment lost."""

from __future__ import annotations

import pytest
from cli_helpers import CONF, FIXTURE, fixture_copy, run
from damage import SEG, corrupt

MSG_ID = "C633640700002A9F0000000000000000"
SPACES = "a msgId is 32 (IPv4) or 56 (IPv6) hex digits without spaces"


@pytest.mark.parametrize("topic", [["--topic", "OrderTopic"], []], ids=["with a topic", "every topic"])
@pytest.mark.parametrize(("flag", "key"), [("--key", ""), ("--unique-key", ""), ("--key", "  ")])
def test_query_with_an_empty_key_is_refused(flag, key, topic):
    out = run("query", FIXTURE, "--config", CONF, *topic, flag, key)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == f"rmqtool: error: {flag} {key!r} is empty: give the key to look for\n"


@pytest.mark.parametrize("given", [f" {MSG_ID} ", f"{MSG_ID} ", f"{MSG_ID[:16]} {MSG_ID[16:]}",
                                   f"{MSG_ID[:16]}\t{MSG_ID[16:]}"])
def test_decode_msgid_with_spaces_around_or_inside_is_refused(given):
    """A msgId pasted with spaces was decoded as if it had none; now it is bad input, said in one line."""
    out = run("decode", "msgid", given)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == f"rmqtool: error: bad msgId {given!r}: {SPACES}\n"


@pytest.mark.parametrize("given", [f" {MSG_ID}", f"{MSG_ID},{MSG_ID[:16]} {MSG_ID[16:]}"])
def test_query_msg_id_with_spaces_is_refused(given):
    out = run("query", FIXTURE, "--config", CONF, "--msg-id", given)
    assert (out.returncode, out.stdout) == (2, "")
    bad = given.split(",")[-1]
    assert out.stderr == f"rmqtool: error: bad msgId {bad!r}: {SPACES}\n"


@pytest.mark.parametrize("args", [
    ["query", FIXTURE, "--topic", "OrderTopic", "--queue", "-1", "--queue-offset", "0"],
    ["query", FIXTURE, "--topic", "OrderTopic", "--queue", "-1", "--time", "0"],
    ["decode", "consumequeue", FIXTURE, "--topic", "OrderTopic", "--queue", "-1"],
], ids=["query --queue-offset", "query --time", "decode consumequeue"])
def test_queue_minus_one_is_not_found_instead_of_bad_input(args):
    out = run(*args)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr.startswith("rmqtool: error: Invalid value for '--queue': -1 is out of range "
                                 "(0..9223372036854775807).") and out.stderr.count("\n") == 1


def test_a_queue_offset_in_a_truncated_segment_is_called_outside_the_commitlog(tmp_path):
    """The middle segment cut to 20000 bytes: queue offset 20 of OrderTopic/2 points at 98491, which lies in the
    part the file lost (85536..131072). It was "outside the commitlog (segments cover 0..196608)"."""
    store = fixture_copy(tmp_path)
    corrupt(store, f"commitlog/{SEG:020d}", "truncate", 20000)
    out = run("query", store, "--config", CONF, "--topic", "OrderTopic", "--queue", "2", "--queue-offset", "20")
    assert (out.returncode, out.stdout) == (3, "")
    assert out.stderr == (f"rmqtool: not found: queue offset 20: offset 98491 falls in the missing part of truncated "
                          f"segment {SEG:020d}: the file holds 20000 of its 65536 bytes, so 85536..131072 is missing "
                          "(segments cover 0..85536, 131072..196608)\n")
