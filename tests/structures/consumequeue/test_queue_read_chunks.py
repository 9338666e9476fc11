"""A consume queue read a chunk of entries at a time (what verify holds of each queue) gives every entry a
whole-file read gives, stops where the broker's rule stops, and verify finds the same in either case."""

from __future__ import annotations

import struct
from pathlib import Path

from cli_helpers import CONF, FIXTURE, fixture_copy

from rmqtool.engine.reader import open_reader
from rmqtool.files.segments import SegmentFile
from rmqtool.ops.verify import verify_path
from rmqtool.structures import consumequeue
from rmqtool.structures.consumequeue import queues
from rmqtool.structures.consumequeue.queues import queue_file_entries

QUEUE_FILE = Path("consumequeue") / "OrderTopic" / "0" / f"{0:020d}"


def read_all(root: Path) -> dict[tuple[str, int], tuple[list[int], list[tuple]]]:
    reader = open_reader(root, CONF)
    out = {}
    for topic in reader.topics():
        for qid in reader.queue_ids(topic):
            parts = list(reader.consume_queue(topic, qid))
            assert all(len(q) <= queues.READ_CHUNK_ENTRIES for q, _ in parts)
            out[(topic, qid)] = ([int(x) for q, _ in parts for x in q],
                                 [tuple(e) for _, es in parts for e in es.tolist()])
    return out


def test_queues_read_three_entries_at_a_time_give_the_entries_of_whole_files(monkeypatch):
    whole = read_all(FIXTURE)
    monkeypatch.setattr(queues, "READ_CHUNK_ENTRIES", 3)
    assert read_all(FIXTURE) == whole
    path = FIXTURE / QUEUE_FILE
    qoffs, entries = queue_file_entries(SegmentFile(path, 0, path.stat().st_size))
    assert whole[("OrderTopic", 0)] == (qoffs.tolist(), [tuple(e) for e in entries.tolist()])


def test_read_in_chunks_stops_at_the_first_unwritten_entry_inside_a_later_chunk(tmp_path, monkeypatch):
    store = fixture_copy(tmp_path)
    path = store / QUEUE_FILE
    data = bytearray(path.read_bytes())
    data[consumequeue.byte_of(7) : consumequeue.byte_of(8)] = bytes(consumequeue.ENTRY_LEN)  # entry 7 not written
    path.write_bytes(bytes(data))
    monkeypatch.setattr(queues, "READ_CHUNK_ENTRIES", 3)
    qoffs, _ = read_all(store)[("OrderTopic", 0)]
    assert qoffs == list(range(7))


def test_verify_finds_the_same_with_queues_read_three_entries_at_a_time(tmp_path, monkeypatch):
    store = fixture_copy(tmp_path)
    path = store / QUEUE_FILE
    data = bytearray(path.read_bytes())
    offset = struct.unpack_from(">q", data, consumequeue.byte_of(5))[0]
    struct.pack_into(">q", data, consumequeue.byte_of(5), offset + (1 << 32))  # out of log order: held back
    struct.pack_into(">q", data, consumequeue.byte_of(9), offset + 1)  # where no record starts
    path.write_bytes(bytes(data))
    whole = verify_path(store, CONF).to_json()
    monkeypatch.setattr(queues, "READ_CHUNK_ENTRIES", 3)
    chunked = verify_path(store, CONF).to_json()
    assert chunked == whole
    assert whole["byKind"] == {"entry-past-log-end": 1, "entry-without-record": 1}
