"""store_picture: every key of the picture, with the same numbers info, consumers and verify print; the damage
verify finds marked on the segment map."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from cli_helpers import run
from conftest import GAP_BASE_MS
from damage import damaged_stores

from rmqtool.engine.reader import open_root_reader
from rmqtool.ops.info import store_info
from rmqtool.ops.picture import store_picture
from rmqtool.ops.views import index_report

KEYS = {"generatedMs", "rmqtoolVersion", "info", "timeline", "queues", "segments", "consumers", "index", "findings"}
SEG = 65536


def _used_slots(root: Path, config: Path | None = None) -> list[int]:
    reader = open_root_reader(root, config)
    return [index_report(reader, p, False)["slots"]["used"] for p in reader.index_paths()]


def test_picture_of_the_fixture_store_has_every_key_with_the_numbers_info_prints(fixture_store):
    stages = []
    picture = store_picture(fixture_store, progress=lambda stage, n: stages.append((stage, n)))
    assert set(picture) == KEYS
    assert stages == [("info", 19), ("consumers", None), ("index", 3)]
    info = store_info(fixture_store)
    assert picture["info"] == info and picture["timeline"] == info["timeline"]
    json.dumps(picture)  # JSON-able
    assert picture["queues"][:2] == [
        {"topic": "AuditLogTopic", "queueId": 2, "minOffset": 0, "maxOffset": 130, "messages": 130, "bytes": 40745,
         "records": 130, "recordBytes": 40745},
        {"topic": "OrderTopic", "queueId": 0, "minOffset": 0, "maxOffset": 33, "messages": 33, "bytes": 18482,
         "records": 33, "recordBytes": 18482}]
    assert len(picture["queues"]) == 19
    for t in info["consumeQueues"]["topics"]:
        mine = [q for q in picture["queues"] if q["topic"] == t["topic"]]
        assert (sum(q["messages"] for q in mine), sum(q["bytes"] for q in mine)) == (t["messages"], t["bytes"])
    assert picture["segments"] == [
        {"name": f"{s:020d}", "start": s, "size": SEG, "used": used, "holes": [], "damaged": []}
        for s, used in ((0, SEG), (SEG, SEG), (2 * SEG, 20614))]
    assert picture["consumers"] is None and picture["findings"] is None
    assert [(i["file"], i["indexCount"], i["maxIndexNum"], i["hashSlotNum"], i["beginTimestamp"], i["endTimestamp"])
            for i in picture["index"]] == [("20231114221320000", 255, 256, 64, 1700000000000, 1700000001029),
                                           ("20231114221320001", 255, 256, 64, 1700000001029, 1700000002058),
                                           ("20231114221320002", 218, 256, 64, 1700000002058, 1700000002933)]
    assert picture["index"][0]["chainLengths"] == {"1": 9, "2": 11, "3": 20, "4": 8, "5": 10, "12": 1, "13": 4,
                                                   "18": 1}
    assert [sum(i["chainLengths"].values()) for i in picture["index"]] == _used_slots(fixture_store)
    assert sum(i["indexCount"] for i in picture["index"]) == info["index"]["entries"]


def test_picture_of_the_golden_store_counts_its_queues_segments_and_index(golden_basic):
    store, conf = golden_basic / "store", golden_basic / "broker.conf"
    picture = store_picture(store, conf, verify=True)
    info = store_info(store, conf)
    assert set(picture) == KEYS and picture["info"] == info
    assert [(q["topic"], q["queueId"], q["messages"], q["bytes"]) for q in picture["queues"]] == [
        ("AuditLogTopic", 0, 120, 92115), ("AuditLogTopic", 1, 112, 78742), ("AuditLogTopic", 2, 141, 106031),
        ("AuditLogTopic", 3, 127, 97012), ("OrderTopic", 0, 290, 232046), ("OrderTopic", 1, 66, 48150),
        ("OrderTopic", 2, 74, 53952), ("OrderTopic", 3, 70, 42498), ("PaymentTopic", 0, 135, 114361),
        ("PaymentTopic", 1, 129, 103065), ("PaymentTopic", 2, 109, 82669), ("PaymentTopic", 3, 127, 103873)]
    assert sum(q["messages"] for q in picture["queues"]) == info["messagesInQueues"] == 1500
    assert [s["used"] for s in picture["segments"]] == [SEG] * 17 + [53632]
    assert picture["segments"][-1]["start"] + 53632 == info["commitlog"]["endOffset"]
    assert all(s["holes"] == [] and s["damaged"] == [] for s in picture["segments"])
    assert len(picture["index"]) == 15
    assert [i["indexCount"] for i in picture["index"]] == [255] * 14 + [50]
    assert [sum(i["chainLengths"].values()) for i in picture["index"]] == _used_slots(store, conf)
    assert picture["findings"] == {"problems": 0, "summary": [], "doctor": "verify found 0 problems, 0 warnings"}


def test_picture_of_a_store_with_a_flipped_record_marks_its_range_on_the_segment_map(tmp_path):
    root = damaged_stores(tmp_path, ["crc-mid"])["crc-mid"]
    picture = store_picture(root, verify=True)
    assert [s["damaged"] for s in picture["segments"]] == [[], [[70747, 70919, "crc-mismatch"]], []]
    assert picture["findings"] == {
        "problems": 4,
        "summary": [{"kind": "crc-mismatch", "structure": "commitlog", "count": 1, "firstOffset": 70747},
                    {"kind": "entry-without-record", "structure": "consumequeue", "count": 1, "firstOffset": 620},
                    {"kind": "queue-offset-gap", "structure": "consumequeue", "count": 1, "firstOffset": 620},
                    {"kind": "index-entry-wrong-key", "structure": "index", "count": 1, "firstOffset": 2456}],
        "doctor": f"verify found 4 problems, 0 warnings that `rmqtool doctor {root} --apply` mends (cut-and-repack, "
                  "rebuild-queues, rebuild-index)"}
    assert store_picture(root)["segments"][1]["damaged"] == []  # not verified: no damage known


def test_picture_of_a_store_missing_a_middle_segment_shows_it_as_a_hole(tmp_path):
    root = damaged_stores(tmp_path, ["middle-missing"])["middle-missing"]
    picture = store_picture(root, verify=True)
    assert picture["segments"][1] == {"name": f"{SEG:020d}", "start": SEG, "size": SEG, "used": 0,
                                      "holes": [[SEG, 2 * SEG]], "damaged": [[SEG, 2 * SEG, "missing-segment"]]}
    assert picture["findings"]["problems"] == 513  # 7 queues' records skip the offsets lost with it


def test_picture_consumers_are_consumers_json_with_the_committed_message_store_time(gapped_store, tmp_path):
    root = tmp_path / "store"
    shutil.copytree(gapped_store, root)
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "consumerOffset.json").write_text(
        '{"offsetTable":{"OrderTopic@billing":{0:5,1:40},"PaymentTopic@billing":{0:64}}}')
    picture = store_picture(root)
    printed = run("consumers", str(root), "--json")
    assert printed.returncode == 1, printed.stderr  # queue 1 past its max is flagged
    times = {(q["topic"], q["queueId"]): q.pop("committedStoreMs") for g in picture["consumers"]["groups"]
             for q in g["queues"]}
    assert picture["consumers"] == json.loads(printed.stdout)
    reader = open_root_reader(root)
    (entry,) = reader.queues.commit_log_offsets("OrderTopic", 0, np.asarray([5])).tolist()
    assert times[("OrderTopic", 0)] == reader.read_record(entry).store_timestamp == GAP_BASE_MS + 9864
    assert times[("OrderTopic", 1)] is None  # committed past the max: no message there
    assert times[("PaymentTopic", 0)] is None  # committed at the max: consumed up to the end
