"""The topic table a writer leaves: a broker started on the store must serve every queue that holds messages."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run, writable_copy

from rmqtool.structures.config.topics import topics_path


def golden_copy(golden_basic: Path, tmp_path: Path) -> Path:
    """A writable copy of the golden store, without a topic table."""
    dst = writable_copy(golden_basic / "store", tmp_path / "store")
    topics_path(dst).unlink(missing_ok=True)
    return dst


def test_append_keeps_the_stores_queue_count(golden_basic, tmp_path):
    store = golden_copy(golden_basic, tmp_path)
    assert sorted(p.name for p in (store / "consumequeue" / "OrderTopic").iterdir()) == ["0", "1", "2", "3"]
    out = run("append", store, "--config", golden_basic / "broker.conf", "--topic", "OrderTopic", "--body", "x")
    assert out.returncode == 0, out.stderr
    table = json.loads(topics_path(store).read_text())["topicConfigTable"]
    assert set(table) == {"OrderTopic"}
    assert table["OrderTopic"]["readQueueNums"] == table["OrderTopic"]["writeQueueNums"] == 4
