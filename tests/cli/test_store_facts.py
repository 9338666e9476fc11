"""Facts a command takes from the store (the broker address, the geometry) come from the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import FIXTURE, fixture_copy, run, tree_digest
from damage import SEG, corrupt

from rmqtool.structures.commitlog import msgid
from rmqtool.structures.commitlog.hosts import parse_host


def test_append_after_recover_of_a_zeroed_last_segment_stamps_the_newest_records_host(tmp_path):
    store = fixture_copy(tmp_path)
    corrupt(store, f"commitlog/{2 * SEG:020d}", "zero", 0, SEG)
    assert run("recover", store).returncode == 0
    out = run("append", store, "--topic", "OrderTopic", "--body", "hi", "--json")
    assert out.returncode == 0, out.stderr
    put = json.loads(out.stdout)
    assert put["wroteOffset"] == 2 * SEG
    assert msgid.decode(put["msgId"]) == (parse_host("198.51.100.7:10911"), 2 * SEG)


def test_query_key_with_a_messages_uniq_key_finds_it_and_says_uniq_key_matched():
    out = run("query", FIXTURE, "--topic", "OrderTopic", "--key", "C000020112340BADF00D000000000000", "--json")
    assert out.returncode == 0, out.stderr
    [hit] = json.loads(out.stdout)["messages"]
    assert (hit["commitLogOffset"], hit["matchedBy"]) == (0, "UNIQ_KEY")
    card = run("query", FIXTURE, "--topic", "OrderTopic", "--key", "C000020112340BADF00D000000000000")
    assert card.returncode == 0, card.stderr
    assert "matched by" in card.stdout and "UNIQ_KEY" in card.stdout


def test_query_key_with_a_keys_word_says_keys_matched_in_json_and_text():
    out = run("query", FIXTURE, "--topic", "OrderTopic", "--key", "shared-1", "--json")
    assert out.returncode == 0, out.stderr
    hits = json.loads(out.stdout)["messages"]
    assert len(hits) == 26 and {h["matchedBy"] for h in hits} == {"KEYS"}
    table = run("query", FIXTURE, "--topic", "OrderTopic", "--key", "shared-1")
    assert "key matched by KEYS in 26 messages" in table.stderr


def test_query_scan_key_with_a_uniq_key_matches_as_the_index_does():
    out = run("query", FIXTURE, "--topic", "OrderTopic", "--key", "C000020112340BADF00D000000000000", "--scan",
              "--json")
    assert out.returncode == 0, out.stderr
    assert [(h["commitLogOffset"], h["matchedBy"]) for h in json.loads(out.stdout)["messages"]] == [(0, "UNIQ_KEY")]


def test_query_key_with_a_uniq_key_on_the_5x_rocksdb_golden_finds_it(golden_v5):
    out = run("query", golden_v5 / "store", "--config", golden_v5 / "broker.conf", "--topic", "OrderTopic",
              "--key", "C000020112340BADF00D000F42400000", "--json")
    assert out.returncode == 0, out.stderr
    [hit] = json.loads(out.stdout)["messages"]
    assert (hit["commitLogOffset"], hit["matchedBy"]) == (0, "UNIQ_KEY")


def test_unique_key_query_does_not_match_a_keys_word():
    out = run("query", FIXTURE, "--topic", "OrderTopic", "--unique-key", "shared-1", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["messages"] == []


GEOMETRY = {"mappedFileSizeCommitLog": 65536, "mappedFileSizeConsumeQueue": 4000, "maxHashSlotNum": 64,
            "maxIndexNum": 256, "storeHost": "198.51.100.7:10911"}


def _same_files(a: Path, b: Path) -> None:
    names = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file() and p.name not in ("checkpoint", "lock"))
    assert names == sorted(str(p.relative_to(b)) for p in b.rglob("*")
                           if p.is_file() and p.name not in ("checkpoint", "lock"))
    for name in names:
        if not name.startswith("index/"):  # index files are named after the load's time
            assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_import_of_a_64k_segment_export_without_config_reproduces_the_store(tmp_path, suffix):
    src = tmp_path / f"export.{suffix}"
    assert run("export", FIXTURE, "--out", src).returncode == 0
    out = run("import", tmp_path / "copy", src, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["endOffset"] == 151686
    _same_files(FIXTURE / "commitlog", tmp_path / "copy" / "commitlog")
    _same_files(FIXTURE / "consumequeue", tmp_path / "copy" / "consumequeue")
    assert [p.stat().st_size for p in sorted((tmp_path / "copy" / "index").iterdir())] == \
        [p.stat().st_size for p in sorted((FIXTURE / "index").iterdir())]


def test_export_jsonl_writes_its_geometry_beside_it_and_keeps_one_message_per_line(tmp_path):
    src = tmp_path / "export.jsonl"
    assert run("export", FIXTURE, "--out", src).returncode == 0
    assert json.loads((tmp_path / "export.jsonl.geometry.json").read_text()) == GEOMETRY
    assert all(json.loads(line)["topic"] for line in src.read_text().splitlines())


def test_export_parquet_keeps_its_geometry_in_the_key_value_metadata(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="the spark extra (pyarrow) is not installed")
    src = tmp_path / "export.parquet"
    assert run("export", FIXTURE, "--out", src).returncode == 0
    assert json.loads(pq.read_metadata(src).metadata[b"rmqtool.geometry"]) == GEOMETRY
    assert not (tmp_path / "export.parquet.geometry.json").exists()


def test_import_with_a_config_contradicting_the_exports_geometry_names_both_values(tmp_path):
    src = tmp_path / "export.jsonl"
    assert run("export", FIXTURE, "--out", src).returncode == 0
    conf = tmp_path / "broker.conf"
    conf.write_text("mappedFileSizeCommitLog=1048576\n")
    out = run("import", tmp_path / "copy", src, "--config", conf)
    assert out.returncode == 2
    assert out.stderr == (f"rmqtool: error: {src} was exported from a store with mappedFileSizeCommitLog=65536, but "
                          "--config says mappedFileSizeCommitLog=1048576: give the exported store's broker.conf, or "
                          "leave --config out to take the export's geometry\n")
    assert not (tmp_path / "copy").exists()


def test_import_of_an_export_without_its_geometry_names_the_segment_setting_and_config(tmp_path):
    src = tmp_path / "export.jsonl"
    assert run("export", FIXTURE, "--out", src).returncode == 0
    (tmp_path / "export.jsonl.geometry.json").unlink()
    out = run("import", tmp_path / "copy", src)
    assert out.returncode == 2
    assert "commitLogOffset 65536 is not the write position" in out.stderr
    assert "mappedFileSizeCommitLog (this store's is 1073741824" in out.stderr and "--config" in out.stderr
    assert not (tmp_path / "copy").exists()


def test_import_of_an_export_into_a_store_of_another_segment_size_is_refused_naming_both(tmp_path):
    src = tmp_path / "export.jsonl"
    assert run("export", FIXTURE, "--out", src).returncode == 0
    store = tmp_path / "big"
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"topic": "T", "bodyText": "x"}\n')
    assert run("import", store, rows).returncode == 0
    before = tree_digest(store)
    out = run("import", store, src)
    assert out.returncode == 2
    assert out.stderr == (f"rmqtool: error: {src} was exported from a store with mappedFileSizeCommitLog=65536, but "
                          f"the segments of {store} are 1073741824 bytes: its records' commitLogOffsets do not fit "
                          "them (--config cannot change a store's segments): import it into a new store, or with "
                          "--repack\n")
    assert tree_digest(store) == before


def test_a_malformed_geometry_sidecar_is_one_line_naming_it(tmp_path):
    src = tmp_path / "export.jsonl"
    assert run("export", FIXTURE, "--out", src).returncode == 0
    (tmp_path / "export.jsonl.geometry.json").write_text('{"mappedFileSizeCommitLog": -1}')
    out = run("import", tmp_path / "copy", src)
    assert out.returncode == 2
    assert out.stderr == (f"rmqtool: error: {src}.geometry.json: mappedFileSizeCommitLog -1 is not a positive "
                          "32-bit size\n")


@pytest.mark.parametrize("fmt", [[], ["--format", "jsonl"]])
def test_export_to_a_csv_name_is_refused_naming_jsonl_and_parquet(tmp_path, fmt):
    out = run("export", FIXTURE, "--out", tmp_path / "x.csv", *fmt)
    assert out.returncode == 2
    assert out.stderr == (f"rmqtool: error: {tmp_path / 'x.csv'}: an export cannot be CSV (binary bodies, a "
                          "properties map) and import reads a .csv name as CSV: name the file .jsonl or .parquet\n")
    assert list(tmp_path.iterdir()) == []


def test_producer_rows_in_csv_import_and_export_back_as_jsonl(tmp_path):
    rows = tmp_path / "rows.csv"
    rows.write_text("topic,bodyText,keys\nOrderTopic,hello,k-1\nOrderTopic,world,k-2\n")
    assert run("import", tmp_path / "s", rows).returncode == 0
    out = run("export", tmp_path / "s", "--out", tmp_path / "back.jsonl")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in (tmp_path / "back.jsonl").read_text().splitlines()]
    assert [(m["topic"], m["properties"]["KEYS"]) for m in lines] == [("OrderTopic", "k-1"), ("OrderTopic", "k-2")]
