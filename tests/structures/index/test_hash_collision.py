"""A real hash collision: keys `Aa` and `BB` have one Java String.hashCode (so do `T#Aa` and `T#BB`),
and with one hash slot every key shares one chain. The index hands back both records for either
key; query must answer each key with its own message only."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import StoreReader
from rmqtool.ops.query import StoreQuery
from rmqtool.structures import index
from rmqtool.structures.javahash import java_string_hash


def test_hash_collision_never_returns_wrong_message(tmp_path):
    assert java_string_hash("Aa") == java_string_hash("BB")
    assert index.key_hash("T#Aa") == index.key_hash("T#BB")
    conf = tmp_path / "broker.conf"
    conf.write_text("maxHashSlotNum=1\nmaxIndexNum=16\nmappedFileSizeCommitLog=65536\nmappedFileSizeConsumeQueue=4000\n")
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"topic": "T", "queueId": 0, "bodyText": body, "keys": key}) + "\n"
                            for body, key in (("body-of-Aa", "Aa"), ("body-of-BB", "BB"))))
    store = tmp_path / "store"
    out = run("import", store, rows, "--config", conf, "--json")
    assert out.returncode == 0, out.stderr
    offsets = {"Aa": 0, "BB": json.loads(out.stdout)["endOffset"] // 2}  # two records of one size
    [path] = sorted(Path(store / "index").iterdir())
    assert index.decode_header(path.read_bytes())["indexCount"] == 5  # UNIQ_KEY and KEYS of each, one slot
    q = StoreQuery(StoreReader(store, StoreConfig.from_file(conf)[0]))
    assert q.index_offsets("T", "Aa") == q.index_offsets("T", "BB") == [offsets["BB"], offsets["Aa"]]
    q.close()

    for key, other in (("Aa", "BB"), ("BB", "Aa")):
        out = run("query", store, "--config", conf, "--topic", "T", "--key", key, "--json", "--body", "text")
        assert out.returncode == 0, out.stderr
        got = [(m["commitLogOffset"], m["properties"]["KEYS"], m["body"]) for m in json.loads(out.stdout)["messages"]]
        assert got == [(offsets[key], key, f"body-of-{key}")], other
