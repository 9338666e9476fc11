"""spark-load of small inputs: below --spark-threshold the rows load in process into the bytes the
Spark path writes; Spark's own log stays off stderr; a loaded store holds only a broker's entries."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_helpers import CONF, run, tree_digest
from spark_rows import STAMP, export_rows, files_of, imported, producer_rows, write_jsonl

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.staging import RECORDS_DIR, adopted
from rmqtool.errors import RmqError
from rmqtool.files.paths import StorePaths
from rmqtool.load.records import LoadOptions
from rmqtool.spark.inprocess import count_rows
from rmqtool.spark.load import IN_PROCESS_STAGES, SPARK_STAGES, load_input, spark_load

BROKER_ENTRIES = {"checkpoint", "commitlog", "config", "consumequeue", "index", "lock"}  # a 4.9 broker's store root
SMALL = 1_000_000  # a threshold every input here is below


@pytest.fixture(scope="module")
def cfg() -> StoreConfig:
    return StoreConfig.from_file(CONF)[0]


def data_files(store: Path) -> dict[str, bytes]:
    """Every file of a store but its lock and its config folder, by path (index names included)."""
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*"))
            if p.is_file() and p.name != "lock" and p.relative_to(store).parts[0] != "config"}


def topic_table(store: Path) -> tuple[dict, int]:
    doc = json.loads((store / "config" / "topics.json").read_text())
    return doc["topicConfigTable"], doc["dataVersion"]["counter"]


def assert_only_broker_entries(store: Path) -> None:
    assert {p.name for p in store.iterdir()} <= BROKER_ENTRIES
    assert {p.name for p in (store / "config").iterdir()} <= {"topics.json", RECORDS_DIR}


def test_in_process_load_writes_the_spark_paths_bytes_and_topic_table(tmp_path, spark, cfg):
    source = write_jsonl(tmp_path / "rows.jsonl", producer_rows(1500, seed=5))
    stages: dict[str, list[str]] = {"spark": [], "local": []}
    results = {name: spark_load([source], tmp_path / name, LoadOptions(cfg, STAMP), load_id="small",
                                threshold=threshold, progress=lambda stage, rows, n=name: stages[n].append(stage))
               for name, threshold in (("spark", 0), ("local", SMALL))}
    assert results["local"].in_process and not results["spark"].in_process
    assert stages == {"spark": SPARK_STAGES, "local": IN_PROCESS_STAGES}
    assert {(r.messages, r.first_offset, r.end_offset) for r in results.values()} == {
        (1500, 0, results["spark"].end_offset)}
    spark_files = data_files(tmp_path / "spark")
    assert sum(name.startswith("commitlog/") for name in spark_files) > 3
    assert sum(name.startswith("index/") for name in spark_files) > 3  # several full index files, named alike
    assert data_files(tmp_path / "local") == spark_files  # segments, queues, index files and checkpoint
    assert topic_table(tmp_path / "local") == topic_table(tmp_path / "spark")
    for name in results:
        assert adopted(StorePaths(tmp_path / name), "small")["messages"] == 1500
        assert_only_broker_entries(tmp_path / name)


def test_in_process_and_spark_continue_a_brokers_store_alike(tmp_path, spark, cfg, fixture_store):
    """The fixture's records name broker hosts of their own: new records name the newest one on both paths."""
    source = write_jsonl(tmp_path / "rows.jsonl", producer_rows(400, seed=6))
    for name, threshold in (("spark", 0), ("local", SMALL)):
        shutil.copytree(fixture_store, tmp_path / name)
        spark_load([source], tmp_path / name, LoadOptions(cfg, STAMP), threshold=threshold)
    for sub in ("commitlog", "consumequeue"):
        assert files_of(tmp_path / "local", sub) == files_of(tmp_path / "spark", sub)
    assert (tmp_path / "local" / "checkpoint").read_bytes() == (tmp_path / "spark" / "checkpoint").read_bytes()
    broker = export_rows(fixture_store, tmp_path / "before.jsonl")[-1]["storeHost"]
    assert broker != "127.0.0.1:10911"
    assert {r["storeHost"] for r in export_rows(tmp_path / "spark", tmp_path / "after.jsonl")[-400:]} == {broker}
    for name in ("spark", "local"):
        assert_only_broker_entries(tmp_path / name)


def test_in_process_refuses_delayed_rows_as_spark_does(tmp_path, cfg):
    source = write_jsonl(tmp_path / "rows.jsonl", [{"topic": "Orders", "bodyText": "now"},
                                                   {"topic": "Orders", "bodyText": "later", "delayLevel": 3}])
    with pytest.raises(RmqError, match=r"rows.jsonl:2: delayLevel: delayed rows are loaded by rmqtool import"):
        spark_load([source], tmp_path / "new", LoadOptions(cfg, STAMP), threshold=SMALL)
    assert not (tmp_path / "new").exists()


def test_a_load_id_loaded_in_process_is_recognised_by_both_paths(tmp_path, cfg):
    source = write_jsonl(tmp_path / "rows.jsonl", producer_rows(50))
    store = tmp_path / "s"
    first = spark_load([source], store, LoadOptions(cfg, STAMP), load_id="once", threshold=SMALL)
    before = tree_digest(store)
    for threshold in (SMALL, 0):  # the Spark path answers before it starts Spark
        again = spark_load([source], store, LoadOptions(cfg, STAMP + 1), load_id="once", threshold=threshold)
        assert again.already and (again.messages, again.end_offset) == (50, first.end_offset)
    assert tree_digest(store) == before


def test_inputs_in_process_are_one_load_and_a_bad_row_names_its_own_file(tmp_path, cfg):
    rows = producer_rows(300, seed=8)
    folder = tmp_path / "more"
    folder.mkdir()
    parts = [write_jsonl(tmp_path / "a.jsonl", rows[:100]), write_jsonl(folder / "b.jsonl", rows[100:250]),
             write_jsonl(folder / "c.jsonl", rows[250:])]
    spark_load([parts[0], folder], tmp_path / "parts", LoadOptions(cfg, STAMP), threshold=SMALL)
    whole = imported(tmp_path, write_jsonl(tmp_path / "all.jsonl", rows), cfg, "whole")
    for sub in ("commitlog", "consumequeue"):  # row numbers (unique keys) and queue turns run across the files
        assert files_of(tmp_path / "parts", sub) == files_of(whole, sub)
    rows[260] = {"topic": "Orders", "body": "not base64!"}
    write_jsonl(folder / "c.jsonl", rows[250:])
    with pytest.raises(RmqError, match=r"c.jsonl:11: body: not valid base64"):
        spark_load([parts[0], folder], tmp_path / "bad", LoadOptions(cfg, STAMP), threshold=SMALL)
    assert not (tmp_path / "bad").exists()


def test_rows_are_counted_up_to_the_threshold(tmp_path):
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text('{"topic": "A"}\n' * 10 + '{"topic": "A"}')  # the last line has no newline
    csv = tmp_path / "rows.csv"
    csv.write_text("topic,bodyText\n" + "A,x\n" * 7)
    pq.write_table(pa.table({"topic": ["A"] * 5}), tmp_path / "rows.parquet")
    assert count_rows([str(jsonl)], "jsonl", 100) == 11
    assert count_rows([str(jsonl), str(jsonl)], "jsonl", 100) == 22
    assert count_rows([str(csv)], "csv", 100) == 7
    assert count_rows([str(tmp_path / "rows.parquet")], "parquet", 100) == 5
    big = tmp_path / "big.jsonl"
    big.write_text('{"topic": "A"}\n' * 200_000)
    assert 100 <= count_rows([str(big), str(jsonl)], "jsonl", 100) < 200_000  # stops soon after the threshold
    with pytest.raises(RmqError, match="not a readable Parquet file"):
        count_rows([str(jsonl)], "parquet", 100)


def test_cli_spark_load_is_quiet_and_leaves_only_a_brokers_files(tmp_path):
    source = write_jsonl(tmp_path / "rows.jsonl", producer_rows(20))
    common = ["--config", CONF, "--store-timestamp", STAMP]
    on_spark = run("spark-load", source, "--store", tmp_path / "spark", *common, "--spark-threshold", "0",
                   "--master", "local[1]", "--json")
    assert on_spark.returncode == 0, on_spark.stderr
    assert [ln for ln in on_spark.stderr.splitlines() if not ln.startswith("rmqtool")] == []  # no JVM, no log4j
    assert json.loads(on_spark.stdout)["inProcess"] is False
    local = run("spark-load", source, "--store", tmp_path / "local", *common, "--json")
    assert local.returncode == 0, local.stderr
    assert local.stderr.splitlines() == ["spark-load: 20 rows, loaded in-process (below --spark-threshold 100000); "
                                         "pass --spark-threshold 0 to always use Spark"]
    assert json.loads(local.stdout)["inProcess"] is True
    assert data_files(tmp_path / "local") == data_files(tmp_path / "spark")
    for name in ("spark", "local"):
        assert_only_broker_entries(tmp_path / name)


def test_a_load_recorded_where_earlier_versions_kept_it_is_recognised_and_moved(tmp_path, cfg):
    source = write_jsonl(tmp_path / "rows.jsonl", producer_rows(30))
    store = tmp_path / "s"
    spark_load([source], store, LoadOptions(cfg, STAMP), load_id="old", threshold=SMALL)
    legacy = store / ".spark-load" / "loads"
    legacy.mkdir(parents=True)
    (store / "config" / RECORDS_DIR / "old.json").rename(legacy / "old.json")
    again = spark_load([source], store, LoadOptions(cfg, STAMP), load_id="old", threshold=SMALL)
    assert again.already and again.messages == 30
    assert not (store / ".spark-load").exists() and (store / "config" / RECORDS_DIR / "old.json").exists()


def test_spark_load_without_format_reads_parquet_and_csv_as_import_does(tmp_path, cfg):
    rows = [{"topic": "Orders", "bodyText": f"m{i}", "tags": "t"} for i in range(3)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "rows.parquet")
    (tmp_path / "rows.csv").write_text("topic,bodyText,tags\n" + "".join(f"Orders,m{i},t\n" for i in range(3)))
    for name, fmt in (("rows.parquet", "parquet"), ("rows.csv", "csv")):
        assert load_input([tmp_path / name]).fmt == fmt
        store = tmp_path / f"store-{fmt}"
        out = run("spark-load", tmp_path / name, "--store", store, "--config", CONF, "--store-timestamp", STAMP,
                  "--json")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["messages"] == 3
        assert files_of(store, "commitlog") == files_of(imported(tmp_path, tmp_path / name, cfg, f"i-{fmt}"),
                                                        "commitlog")
    with pytest.raises(RmqError, match=r"\(rows.parquet is parquet, rows.csv is csv\): load one format at a time"):
        load_input([tmp_path / "rows.parquet", tmp_path / "rows.csv"])


def test_in_process_load_with_a_store_timestamp_older_than_the_newest_index_file_does_not_spin(tmp_path, cfg,
                                                                                               monkeypatch):
    """issue 42: `spark-load --store-timestamp 1700000000000` into a store whose newest index file is named for
    2026 tried every millisecond in between for its next index file's name (minutes). The names tried are
    counted: a roll that spins fails past a few instead of hanging."""
    from rmqtool.structures import index

    late = 1_780_000_000_000  # 2026-05-28
    store = tmp_path / "store"
    spark_load([write_jsonl(tmp_path / "a.jsonl", producer_rows(600, seed=7))], store, LoadOptions(cfg, late),
               load_id="late", threshold=SMALL)
    before = index.file_names(store / "index")
    tried: list[int] = []
    real = index.file_name

    def file_name(stamp: int) -> str:
        tried.append(stamp)
        assert len(tried) <= 16, f"{len(tried)} index file names tried, from {tried[0]}"  # 2 a file: 8 files
        return real(stamp)

    monkeypatch.setattr(index, "file_name", file_name)
    result = spark_load([write_jsonl(tmp_path / "b.jsonl", producer_rows(600, seed=8))], store,
                        LoadOptions(cfg, STAMP), load_id="old", threshold=SMALL)
    assert result.in_process and result.messages == 600
    after = index.file_names(store / "index")
    assert after[: len(before)] == before and len(after) > len(before)
    assert index.name_time(after[len(before)]) == index.name_time(before[-1]) + 1  # past the newest, at once
