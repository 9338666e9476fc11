"""A write stopped at any point of a batch leaves every file as it was: stopped after the k-th chunk of records,
half way through the k-th put of consume-queue entries or of index entries (new queue folders, a new index file
and a new commitlog segment on the way), or once the topic table was written but before the commit, for every k
the write reaches (1, 2, 3, 5, 8, ...). In process, deterministic: dispatch runs on the writing thread."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import CONF, fixture_copy, tree_digest

from rmqtool.engine import message_store
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.message_store import MessageStore
from rmqtool.errors import Interrupted
from rmqtool.io.sources import Source
from rmqtool.load import writer
from rmqtool.load.records import LoadOptions
from rmqtool.structures.config import topics
from rmqtool.structures.consumequeue.queue import ConsumeQueue
from rmqtool.structures.index.service import IndexService

ROWS = 300


def _halfway(real):
    """The k-th call writes the first half of its entries, then the interrupt lands."""
    def call(self, *arrays, **kw):
        half = max(1, len(arrays[0]) // 2)
        if len(arrays) == 4:  # a queue put: offsets, sizes, tags codes, first queue offset
            real(self, *(a[:half] for a in arrays[:3]), arrays[3], **kw)
        else:
            real(self, *(a[:half] for a in arrays), **kw)
        raise KeyboardInterrupt
    return call


def _after(real):
    def call(self, *args, **kw):
        real(self, *args, **kw)
        raise KeyboardInterrupt
    return call


POINTS = {"records": (MessageStore, "write_planned", _after), "queue entries": (ConsumeQueue, "put", _halfway),
          "index entries": (IndexService, "put", _halfway), "topic table": (topics.persist, "save", _after)}


@pytest.fixture
def setup(tmp_path: Path, monkeypatch):
    store = fixture_copy(tmp_path)
    cfg = StoreConfig.from_file(CONF)[0]
    with MessageStore(store, cfg):
        pass
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"topic": ["TopicA", "NewTopic", "Other"][i % 3], "bodyText": "b" * 300,
                                        "keys": f"key-{i} more-{i}"}) + "\n" for i in range(ROWS)))
    monkeypatch.setattr(writer, "CHUNK_ROWS", 16)  # many chunks, so many points
    monkeypatch.setattr(message_store, "DISPATCH_MAX_BEHIND", -1)  # every chunk dispatched on this thread
    return store, cfg, rows


def _load(store: Path, cfg: StoreConfig, rows: Path) -> None:
    writer.load(store, Source(str(rows), "jsonl"), LoadOptions(cfg, 1_700_000_001_000), batch_size=8,
                command="append --batch", clock=lambda: 1_800_000_000_000)


def _points():
    """1, 2, 3, 5, 8, 13, ...: the first calls one by one, later ones sparser."""
    a, b = 1, 2
    while True:
        yield a
        a, b = b, a + b


@pytest.mark.parametrize("point", list(POINTS))
def test_a_write_stopped_at_any_point_of_a_batch_leaves_every_file_as_it_was(setup, monkeypatch, point):
    store, cfg, rows = setup
    before = tree_digest(store)
    cls, name, wrap = POINTS[point]
    real = getattr(cls, name)
    stopped_at = []
    for k in _points():
        calls = [0]

        def nth(self, *args, real=real, k=k, calls=calls, **kw):
            calls[0] += 1
            return (wrap(real) if calls[0] == k else real)(self, *args, **kw)

        monkeypatch.setattr(cls, name, nth)
        try:
            _load(store, cfg, rows)
        except Interrupted:
            stopped_at.append(k)
            after = tree_digest(store)
            assert {f for f in set(after) | set(before) if after.get(f) != before.get(f)} == set(), (point, k)
            continue
        finally:
            monkeypatch.setattr(cls, name, real)
        break  # the k-th call never came: the write ran to its end
    assert len(stopped_at) >= (1 if point == "topic table" else 3), stopped_at
    assert tree_digest(store) != before  # the last, uninterrupted write is in
