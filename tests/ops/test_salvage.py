"""Salvage into a store: `salvage --into NEW` and `import --repack` write the intact records of a damaged store
one after another, as the broker would have appended them, where before no command turned a salvage into a
store (`import` refused "a gap")."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
from cli_helpers import CONF, fixture_copy, run
from damage import SEG, damaged_stores

from rmqtool.engine.reader import open_reader
from rmqtool.ops.log_rows import log_rows
from rmqtool.ops.verify import verify_path

KEPT = ["topic", "queueId", "bornTimestamp", "storeTimestamp", "body", "propertiesString", "commitLogOffset",
        "storeSize", "queueOffset", "tagsCode"]


def rows(root: Path) -> list[dict]:
    out: list[dict] = []
    for item in log_rows(open_reader(root, CONF)):
        if isinstance(item, pa.RecordBatch):
            out += item.select(KEPT).to_pylist()
    return out


def same_messages(a: list[dict], b: list[dict]) -> bool:
    moved = ("commitLogOffset", "queueOffset")
    return [{k: v for k, v in r.items() if k not in moved} for r in a] == \
        [{k: v for k, v in r.items() if k not in moved} for r in b]


def test_salvage_into_a_new_store_writes_every_intact_record_at_new_offsets(tmp_path):
    damaged = damaged_stores(tmp_path, ["torn-tail"])["torn-tail"]
    intact = rows(damaged)
    new = tmp_path / "new"
    out = run("salvage", damaged, "--config", CONF, "--into", new, "--json")
    assert out.returncode == 1  # a corrupt region was skipped
    doc = json.loads(out.stdout)
    assert (doc["messages"], doc["corruptRegions"], doc["offsetMsgIdsChanged"]) == (len(intact), 1, True)
    written = rows(new)
    assert same_messages(written, intact)
    assert written[0]["commitLogOffset"] == 0 and doc["endOffset"] == doc["bytes"]
    queued: dict[tuple[str, int], list[int]] = defaultdict(list)
    for r in written:  # a queued record's queue offset counted again, one after another in its queue
        if r["tagsCode"] is not None:
            queued[(r["topic"], r["queueId"])].append(r["queueOffset"])
    assert all(offsets == list(range(len(offsets))) for offsets in queued.values())
    assert sum(map(len, queued.values())) == 399
    assert {p.stat().st_size for p in (new / "commitlog").iterdir()} == {SEG}  # the damaged store's geometry
    assert verify_path(new, CONF).problems == 0


def test_import_repack_turns_a_salvage_file_with_a_gap_into_a_store(tmp_path):
    damaged = damaged_stores(tmp_path, ["crc-mid"])["crc-mid"]
    salvaged = tmp_path / "s.jsonl"
    assert run("salvage", damaged, "--config", CONF, "--out", salvaged).returncode == 1
    refused = run("import", tmp_path / "a", salvaged, "--config", CONF)
    assert refused.returncode == 2 and "a gap" in refused.stderr and not (tmp_path / "a").exists()
    done = run("import", tmp_path / "b", salvaged, "--config", CONF, "--repack", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["repacked"] is True
    assert same_messages(rows(tmp_path / "b"), rows(damaged))
    assert verify_path(tmp_path / "b", CONF).problems == 0
    said = run("import", tmp_path / "c", salvaged, "--config", CONF, "--repack")
    assert said.stderr.endswith("import: the records were written at new offsets: their offset msgIds changed "
                                "(their UNIQ_KEY client msgIds did not)\n")


def test_salvage_refuses_an_existing_store_the_store_itself_and_two_or_no_outputs(tmp_path):
    store = fixture_copy(tmp_path)
    for args, says in (((), "give --out FILE or --into NEW_STORE"),
                       (("--out", tmp_path / "x.jsonl", "--into", tmp_path / "n"), "give --out FILE or --into"),
                       (("--into", store), "exists and is not empty"),
                       (("--into", store / "commitlog"), "exists and is not empty")):
        out = run("salvage", store, "--config", CONF, *args)
        assert out.returncode == 2 and says in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "n").exists()
    assert run("import", tmp_path / "n", tmp_path / "x", "--repack", "--skip-existing").returncode == 2


def test_salvage_out_named_parquet_writes_parquet_not_jsonl(tmp_path):
    damaged = damaged_stores(tmp_path, ["crc-mid"])["crc-mid"]
    salvaged = tmp_path / "s.parquet"
    out = run("salvage", damaged, "--config", CONF, "--out", salvaged)
    assert out.returncode == 1 and out.stderr.endswith(f"419 intact messages written to {salvaged}; "
                                                       "1 corrupt region skipped\n")
    assert salvaged.read_bytes()[:4] == b"PAR1"
    assert run("import", tmp_path / "b", salvaged, "--config", CONF, "--repack").returncode == 0
    assert same_messages(rows(tmp_path / "b"), rows(damaged))


def test_importing_a_salvage_file_with_a_gap_advises_repack_not_config(tmp_path):
    damaged = damaged_stores(tmp_path, ["crc-mid"])["crc-mid"]
    salvaged = tmp_path / "s.jsonl"
    assert run("salvage", damaged, "--config", CONF, "--out", salvaged).returncode == 1
    refused = run("import", tmp_path / "a", salvaged, "--config", CONF)
    assert refused.returncode == 2
    assert (f"{salvaged}:209: commitLogOffset: commitLogOffset 70919 is not the write position 70747 (a gap: 172 "
            "bytes, records missing before it); import --repack writes the records one after another at new "
            "offsets;") in refused.stderr
