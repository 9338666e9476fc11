"""`bench recover` crash-recovers a generated store, then looks its messages up by msgId and unique key."""

from __future__ import annotations

import json

from cli_helpers import run


def test_bench_recover_finds_every_unique_key_the_generator_wrote():
    """It looked up keys of a scheme the generator no longer writes (the load path makes them): the first
    lookup found nothing and the bench ended in an AssertionError, whatever --messages."""
    out = run("bench", "recover", "--messages", "3000", "--body-size", "10", "--lookups", "20", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["recover"]["messages"], doc["verify"]["messages"], doc["verify"]["problems"]) == (3000, 3000, 0)
    assert doc["queryMsgId"]["lookups"] == doc["queryUniqueKey"]["lookups"] == 20
