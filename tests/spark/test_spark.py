"""spark-load and spark-export on a local Spark: the same bytes as sequential import, atomic
adoption, idempotent re-runs, bad rows named, a killed load leaving the store as it was."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_helpers import CONF, RUN_GUARD_S, run, tree_digest
from spark_rows import STAMP, export_rows, files_of, imported, producer_rows, write_jsonl

from rmqtool.engine import staging as staging_mod
from rmqtool.engine.config import StoreConfig
from rmqtool.engine.message_store import MessageStore
from rmqtool.errors import RmqError
from rmqtool.files.paths import StorePaths
from rmqtool.load.records import LoadOptions
from rmqtool.spark.brokers import ExportStore, export_stores
from rmqtool.spark.export import spark_export
from rmqtool.spark.load import spark_load

RMQTOOL = str(Path(sys.executable).with_name("rmqtool"))
KILLED_LOAD_ROWS = 20000  # enough tasks that a kill lands while they write (4 partitions, two at a time)


@pytest.fixture(scope="module")
def cfg() -> StoreConfig:
    return StoreConfig.from_file(CONF)[0]


def index_contents(store: Path) -> list[bytes]:
    """Index files in name order, by content (names are creation times)."""
    return [p.read_bytes() for p in sorted((store / "index").iterdir())]


def assert_same_store(a: Path, b: Path) -> None:
    assert files_of(a, "commitlog") == files_of(b, "commitlog")
    assert files_of(a, "consumequeue") == files_of(b, "consumequeue")
    assert index_contents(a) == index_contents(b)


def test_spark_load_writes_the_bytes_sequential_import_writes(tmp_path, spark, cfg):
    source = write_jsonl(tmp_path / "rows.jsonl", producer_rows(4000))
    result = spark_load([source], tmp_path / "loaded", LoadOptions(cfg, STAMP), partitions=3)
    assert result.messages == 4000 and not result.already
    want = imported(tmp_path, source, cfg)
    segments = files_of(want, "commitlog")
    assert len(segments) > 10  # the rows roll many 64 KiB segments: blank markers included
    assert_same_store(tmp_path / "loaded", want)
    assert not (tmp_path / "loaded" / "abort").exists()
    assert (tmp_path / "loaded" / "checkpoint").read_bytes() == (want / "checkpoint").read_bytes()
    tables = [json.loads((s / "config" / "topics.json").read_text())["topicConfigTable"] for s in (tmp_path / "loaded",
                                                                                                 want)]
    assert tables[0] == tables[1] and set(tables[0]) == {"Orders", "Payments", "Audit"}
    assert all(t["readQueueNums"] == t["writeQueueNums"] == 4 for t in tables[0].values())


def test_parquet_input_with_binary_bodies_loads_like_its_jsonl(tmp_path, spark, cfg):
    rows = producer_rows(1500, seed=2)
    def flat_keys(keys):
        return keys if isinstance(keys, str) else " ".join(keys or []) or None

    table = pa.Table.from_pylist([{**r, "body": base64.b64decode(r["body"]), "keys": flat_keys(r.get("keys"))}
                                  for r in rows])
    pq.write_table(table, tmp_path / "rows.parquet")
    jsonl = write_jsonl(tmp_path / "rows.jsonl", rows)
    spark_load([tmp_path / "rows.parquet"], tmp_path / "from_parquet", LoadOptions(cfg, STAMP), fmt="parquet")
    assert_same_store(tmp_path / "from_parquet", imported(tmp_path, jsonl, cfg))


def test_load_into_a_store_continues_its_end_and_queue_offsets(tmp_path, spark, cfg):
    rows = producer_rows(3000, seed=3)
    for i, r in enumerate(rows):  # own unique keys, so the split load equals the whole one
        r["properties"] = {**r.get("properties", {}), "UNIQ_KEY": f"{i:032X}"}
        r["queueId"] = i % 2
    first, second = write_jsonl(tmp_path / "a.jsonl", rows[:1700]), write_jsonl(tmp_path / "b.jsonl", rows[1700:])
    store = imported(tmp_path, first, cfg, "split")
    spark_load([second], store, LoadOptions(cfg, STAMP), partitions=2)
    whole = imported(tmp_path, write_jsonl(tmp_path / "all.jsonl", rows), cfg, "whole")
    assert files_of(store, "commitlog") == files_of(whole, "commitlog")
    assert files_of(store, "consumequeue") == files_of(whole, "consumequeue")
    assert len(export_rows(store, tmp_path / "check.jsonl")) == 3000


def test_rerunning_a_load_id_adds_nothing(tmp_path, spark, cfg):
    source = write_jsonl(tmp_path / "rows.jsonl", producer_rows(500))
    store = tmp_path / "s"
    spark_load([source], store, LoadOptions(cfg, STAMP), load_id="nightly-1")
    before = tree_digest(store)
    again = spark_load([source], store, LoadOptions(cfg, STAMP + 5), load_id="nightly-1")
    assert again.already and again.messages == 500
    assert tree_digest(store) == before
    default_id = spark_load([source], store, LoadOptions(cfg, STAMP))  # no id: derived from the input
    assert not default_id.already
    assert spark_load([source], store, LoadOptions(cfg, STAMP)).already


def test_a_bad_row_names_file_row_and_field_and_leaves_no_store(tmp_path, spark, cfg):
    rows = producer_rows(300)
    rows[211] = {"topic": "Orders", "body": "not base64!"}
    source = write_jsonl(tmp_path / "rows.jsonl", rows)
    with pytest.raises(RmqError, match=r"rows.jsonl: row 212: body: not valid base64"):
        spark_load([source], tmp_path / "new", LoadOptions(cfg, STAMP))
    assert not (tmp_path / "new").exists()


def test_a_bad_row_leaves_an_existing_store_byte_for_byte(tmp_path, spark, cfg, store_copy):
    before = tree_digest(store_copy)
    source = write_jsonl(tmp_path / "rows.jsonl", [{"topic": "Orders", "bodyText": "x"}, {"topic": "a/b"}])
    with pytest.raises(RmqError, match=r"row 2: topic: .*cannot name a consume-queue folder"):
        spark_load([source], store_copy, LoadOptions(cfg, STAMP))
    assert tree_digest(store_copy) == before
    assert not (store_copy / ".spark-load").exists()


def test_adoption_interrupted_after_the_journal_is_finished_by_the_next_writer(tmp_path, spark, cfg, monkeypatch):
    source = write_jsonl(tmp_path / "rows.jsonl", producer_rows(2000))
    want = imported(tmp_path, source, cfg)
    store = tmp_path / "s"
    real_replace, moved = os.replace, []

    def crash_after_three(src, dst):
        if len(moved) == 3:
            raise KeyboardInterrupt("killed during adoption")
        moved.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(staging_mod.os, "replace", crash_after_three)
    with pytest.raises(KeyboardInterrupt):
        spark_load([source], store, LoadOptions(cfg, STAMP), load_id="half")
    monkeypatch.setattr(staging_mod.os, "replace", real_replace)
    assert (store / ".spark-load" / "ADOPTING").exists()
    with MessageStore(store, cfg):  # any writer finishes the adoption first
        pass
    assert not (store / ".spark-load").exists()  # journal, staging and the folder itself
    assert_same_store(store, want)
    assert staging_mod.adopted(StorePaths(store), "half")["messages"] == 2000


def test_a_load_killed_while_tasks_write_leaves_the_store_as_it_was(tmp_path, cfg, store_copy):
    source = write_jsonl(tmp_path / "rows.jsonl", producer_rows(KILLED_LOAD_ROWS))
    before = tree_digest(store_copy)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    cmd = [RMQTOOL, "spark-load", str(source), "--store", str(store_copy), "--config", str(CONF),
           "--master", "local[2]", "--load-id", "killed", "--store-timestamp", str(STAMP), "--partitions", "4",
           "--spark-threshold", "0"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    loads = store_copy / ".spark-load"
    deadline = time.time() + 120
    while time.time() < deadline and not any(loads.glob("killed@*/work/keys-*[0-9]")):
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert any(loads.glob("killed@*/work/plan-*[0-9]")), "the load was killed before its tasks wrote"
    # Python workers of the killed attempt may still be finishing a task: they only touch their own folder.
    assert {k: v for k, v in tree_digest(store_copy).items() if not k.startswith(".spark-load/")} == before
    out = subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["messages"] == KILLED_LOAD_ROWS
    assert not loads.exists()
    verify = subprocess.run([RMQTOOL, "verify", str(store_copy), "--config", str(CONF)], capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_spark_export_equals_export_row_for_row(tmp_path, spark, cfg, fixture_store, fmt):
    out = tmp_path / "out"
    stages = []
    result = spark_export([ExportStore(fixture_store, cfg, "broker-a")], out, fmt=fmt,
                          progress=lambda stage, rows: stages.append((stage, rows)))
    assert stages == [("start Spark", None), ("split", None), ("export", 420)]
    want = export_rows(fixture_store, tmp_path / "export.jsonl")
    assert result.messages == len(want) == 420 and result.ranges > 1
    got = part_rows(out, fmt)
    assert {r.pop("brokerName") for r in got} == {"broker-a"}
    assert got == want


def part_rows(folder: Path, fmt: str) -> list[dict]:
    """The rows of a spark-export's part files in `folder`, in name order, bodies as base64 (as export's JSONL)."""
    parts = sorted(p for p in folder.iterdir() if p.name.startswith("part-"))
    if fmt == "jsonl":
        return [json.loads(line) for p in parts for line in p.read_text().splitlines()]
    got = [r for p in parts for r in pq.read_table(p).to_pylist()]
    for r in got:
        r["properties"] = dict(r["properties"])
        r["body"] = base64.b64encode(r["body"]).decode()
    return got


def test_two_brokers_stores_export_each_message_once_in_its_brokers_folder(tmp_path, spark, cfg, fixture_store,
                                                                          store_copy):
    conf = tmp_path / "broker-b.conf"
    conf.write_text(f"{CONF.read_text()}brokerName=broker-b\n")
    stores = export_stores([fixture_store, store_copy], [CONF, conf], ["broker-a", None])
    assert [s.broker for s in stores] == ["broker-a", "broker-b"]
    result = spark_export(stores, tmp_path / "out")
    assert result.messages == 840
    want = export_rows(fixture_store, tmp_path / "export.jsonl")
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")) == [
        "_SUCCESS", "brokerName=broker-a", "brokerName=broker-b"]
    for broker in ("broker-a", "broker-b"):
        folder = tmp_path / "out" / f"brokerName={broker}"
        assert json.loads((folder / "_geometry.json").read_text())["mappedFileSizeCommitLog"] == 65536
        assert part_rows(folder, "parquet") == want  # the column is the folder's name, each broker in log order
    read = spark.read.parquet(str(tmp_path / "out")).groupBy("brokerName").count().collect()
    assert {r["brokerName"]: r["count"] for r in read} == {"broker-a": 420, "broker-b": 420}
    done = run("import", tmp_path / "replayed", tmp_path / "out" / "brokerName=broker-b")  # geometry from its folder
    assert done.returncode == 0, done.stderr
    assert files_of(tmp_path / "replayed", "commitlog") == files_of(fixture_store, "commitlog")


def test_a_folder_that_is_not_a_store_among_several_is_named_and_nothing_written(tmp_path, fixture_store):
    (tmp_path / "notes").mkdir()
    done = run("spark-export", str(fixture_store), str(tmp_path / "notes"), "--config", str(CONF), "--out",
               str(tmp_path / "out"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"rmqtool: error: {tmp_path / 'notes'}: not a RocketMQ store (no commitlog/ folder)\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes"]


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_import_of_a_spark_export_into_a_new_store_takes_its_geometry_not_the_default_segment(tmp_path, spark, cfg,
                                                                                              fixture_store, fmt):
    """spark-export wrote no geometry: the first part file imported into a new store made 1 GiB segments, and the
    part whose records begin the second 64 KiB segment was refused as a gap."""
    out = tmp_path / "out"
    spark_export([ExportStore(fixture_store, cfg, "store")], out, fmt=fmt)
    assert json.loads((out / "_geometry.json").read_text()) == {
        "mappedFileSizeCommitLog": 65536, "mappedFileSizeConsumeQueue": 4000, "maxHashSlotNum": 64, "maxIndexNum": 256}
    parts = sorted(p for p in out.iterdir() if p.name.startswith("part-"))
    assert len(parts) > 1
    for part in parts:  # in log order, the first into a new store with no --config
        done = subprocess.run([RMQTOOL, "import", str(tmp_path / "copy"), str(part)], capture_output=True, text=True,
                              timeout=RUN_GUARD_S)
        assert done.returncode == 0, done.stderr
    assert files_of(tmp_path / "copy", "commitlog") == files_of(fixture_store, "commitlog")


def test_csv_input_with_json_properties_loads_like_its_jsonl(tmp_path, spark, cfg):
    (tmp_path / "rows.csv").write_text('topic,bodyText,tags,keys,queueId,properties\n'
                                       'Orders,hello,TagA,k1 k2,1,"{""region"":""eu""}"\nAudit,world,,,,\n')
    jsonl = write_jsonl(tmp_path / "rows.jsonl", [
        {"topic": "Orders", "bodyText": "hello", "tags": "TagA", "keys": "k1 k2", "queueId": 1,
         "properties": {"region": "eu"}},
        {"topic": "Audit", "bodyText": "world"}])
    spark_load([tmp_path / "rows.csv"], tmp_path / "from_csv", LoadOptions(cfg, STAMP), fmt="csv")
    assert_same_store(tmp_path / "from_csv", imported(tmp_path, jsonl, cfg))
