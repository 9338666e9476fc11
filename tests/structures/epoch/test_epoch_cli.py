"""`decode epoch` and `info` show a 5.x controller-mode store's epochs, broker identity and HA offsets."""

from __future__ import annotations

import json

import pytest
from cli_helpers import FIXTURE, run, writable_copy
from stores5x import make_ha_store, write_epoch_file

from rmqtool.ops.info import store_info

ENTRIES = [{"epoch": 1, "startOffset": 0, "endOffset": 1000}, {"epoch": 2, "startOffset": 1000, "endOffset": 151686},
           {"epoch": 5, "startOffset": 151686, "endOffset": None}]
IDENTITY = {"file": "brokerIdentity", "text": "DefaultCluster#broker-a#2", "clusterName": "DefaultCluster",
            "brokerName": "broker-a", "brokerId": 2, "loaded": True, "problem": None}


@pytest.fixture
def store(tmp_path):
    make_ha_store(FIXTURE, tmp_path / "store")
    return tmp_path / "store"


def test_decode_epoch_shows_epochs_identity_and_ha_offsets(store):
    out = run("decode", "epoch", store, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["epochFile"]["loadedFrom"] == "epochFileCheckpoint" and doc["epochFile"]["entries"] == ENTRIES
    assert [f["count"] for f in doc["epochFile"]["files"]] == [3, 2]
    assert doc["brokerIdentity"] == IDENTITY and doc["brokerIdentityTemp"] is None
    assert (doc["masterFlushedOffset"], doc["confirmPhyOffset"], doc["findings"]) == (151686, 151686, [])
    table = run("decode", "epoch", store)
    assert table.returncode == 0 and "open" in table.stdout and "broker-a" in table.stdout


def test_decode_epoch_of_a_file_failing_its_crc_exits_1_and_loads_the_bak(store):
    path = store / "epochFileCheckpoint"
    path.write_bytes(path.read_bytes().replace(b"5-151686", b"5-151687"))
    out = run("decode", "epoch", path, "--json")
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    assert doc["epochFile"]["loadedFrom"] == "epochFileCheckpoint.bak"
    assert doc["epochFile"]["entries"] == [ENTRIES[0], {**ENTRIES[1], "endOffset": None}]
    assert [(f["kind"], f["offset"], f["bytes"]) for f in doc["findings"]] == [("crc-mismatch", 12, 20)]
    table = run("decode", "epoch", path)
    assert table.returncode == 1 and "line 2 says CRC" in table.stderr


def test_decode_epoch_of_a_store_without_ha_files_is_refused():
    out = run("decode", "epoch", FIXTURE)
    assert out.returncode == 2 and "no epochFileCheckpoint" in out.stderr and "Traceback" not in out.stderr


def test_info_shows_the_ha_section_only_when_the_files_are_there(store):
    doc = store_info(store)
    assert doc["ha"] == {"epochFile": {"loadedFrom": "epochFileCheckpoint", "brokerStarts": True, "epochs": 3,
                                       "lastEpoch": 5, "lastStartOffset": 151686},
                         "brokerIdentity": IDENTITY, "brokerIdentityTemp": None, "masterFlushedOffset": 151686,
                         "confirmPhyOffset": 151686, "findings": []}
    assert "ha" not in store_info(FIXTURE)
    out = run("info", store)
    assert out.returncode == 0, out.stderr
    assert "3, the last 5 from offset 151686" in out.stdout
    assert "cluster DefaultCluster, broker broker-a, id 2" in out.stdout
    assert "masterFlushedOffset 151686, confirmPhyOffset 151686" in out.stdout


def test_info_says_the_epochs_came_from_the_bak_and_the_identity_did_not_load(store):
    write = store / "epochFileCheckpoint"
    write.write_bytes(write.read_bytes().replace(b"3\n", b"4\n", 1))
    (store / "brokerIdentity").write_text("DefaultCluster#broker-a#2\n")
    ha = store_info(store)["ha"]
    assert (ha["epochFile"]["loadedFrom"], ha["epochFile"]["epochs"], ha["epochFile"]["lastEpoch"]) == \
        ("epochFileCheckpoint.bak", 2, 2)
    assert [f["kind"] for f in ha["findings"]] == ["count-mismatch", "identity-not-loaded"]
    out = run("info", store)
    assert "(loaded from epochFileCheckpoint.bak)" in out.stdout and "not loaded: brokerId" in out.stdout


def test_a_store_with_only_controller_ha_files_is_a_5x_store_rmqtool_does_not_write(tmp_path):
    store = writable_copy(FIXTURE, tmp_path / "store")
    write_epoch_file(store, [(1, 0)])
    doc = json.loads(run("info", store, "--json").stdout)
    assert (doc["kind"], doc["writable"]) == ("5x-file", False)
    assert "5.x controller-mode HA state: epochFileCheckpoint" in doc["evidence"]
    out = run("append", store, "--topic", "T", "--body", "x")
    assert out.returncode == 2 and "rmqtool writes only 4.x stores" in out.stderr
