"""A single `append` is the broker's putMessage through the engine (engine/put.py), never the bulk loader."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from dataclasses import replace

from cli_helpers import CONF, RUN_GUARD_S

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.producer import build_message
from rmqtool.engine.put import put_one
from rmqtool.structures.commitlog import properties

IMPORTED_AFTER = """
import json, sys
from rmqtool.cli.app import main
try:
    main(sys.argv[1:])
finally:
    print(json.dumps(sorted(m for m in sys.modules if m.startswith("rmqtool.load"))), file=sys.stderr)
"""


def _loader_modules(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", IMPORTED_AFTER, *args], capture_output=True, text=True,
                          timeout=RUN_GUARD_S)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.splitlines()[-1])


def test_a_single_append_never_loads_the_bulk_loader(tmp_path):
    assert _loader_modules("append", str(tmp_path / "s"), "--topic", "T", "--body", "hi", "--config", str(CONF)) == []


def test_a_batch_append_goes_through_the_bulk_loader(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"topic": "T", "bodyText": "hi"}\n')
    assert "rmqtool.load.writer" in _loader_modules("append", str(tmp_path / "s"), "--batch", str(rows),
                                                    "--config", str(CONF))


# What a single append wrote when it still went through load/ (sha256 of each file): the engine's put keeps it.
QUEUE_FILE = "consumequeue/OrderTopic/2/00000000000000000000"
WRITTEN = {
    "checkpoint": "31737c8a9c18ee0e1edeb2788d4987bb1f843b0ed634f41241634e41f3c23fbf",
    "commitlog/00000000000000000000": "14d8e356d331bec8c12b12a2630f4c4354a107b52c37bfbff4d6ed603f739b8a",
    "config/topics.json": "57c13a0a0565cc483c0475040569bfbe0e63266948cc442074540acbaa0cb731",
    QUEUE_FILE: "e193da2da0c4a187b88ffe20531d434d352bc39f6d5572a4fb92c343c89f951d",
    "index/20231114221320123": "a004ba67a0664c1ce2d6e8441357b31bec172cb725755f1db879d51518b71524",
    "lock": "0c030586945fe504b604ecc2e875c38ede400cd5cd73da9730302162e6b02c6f",
}


def test_a_single_put_writes_the_bytes_append_always_wrote(tmp_path, monkeypatch):
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_123 * 1_000_000)
    msg = build_message("OrderTopic", b"hello", queue_id=2, tags="TagA", keys="k1 k2", user={"a": "b"},
                        born_timestamp=1_700_000_000_000)
    props = {**properties.parse_java(msg.properties_string), properties.UNIQ_KEY: "7F0000010001000000000000000A"}
    msg = replace(msg, properties_string=properties.build((k, props[k]) for k in properties.java_hashmap_order(props)))
    root = tmp_path / "s"
    result = put_one(root, StoreConfig.from_file(CONF)[0], msg, flush=None, register_topics=True,
                     keep_store_host=False)
    monkeypatch.undo()
    assert result.to_json() == {"status": "PUT_OK", "msgId": "7F00000100002A9F0000000000000000", "wroteOffset": 0,
                                "wroteBytes": 168, "queueOffset": 0, "storeTimestamp": 1_700_000_000_123,
                                "msgNum": 1}
    written = {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
               for p in sorted(root.rglob("*")) if p.is_file()}
    assert written == WRITTEN
