"""`doctor --apply`'s promises about what a repair changes: the loss it states is the loss it makes, every
committed consumer position moves with the queue it renumbers, and the status says what happened."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from cli_helpers import CONF, fixture_copy, run
from damage import SEG, corrupt, damaged_stores

from rmqtool.engine.reader import open_reader
from rmqtool.ops.log_rows import log_rows
from rmqtool.structures.commitlog.sysflag import enters_consume_queue
from rmqtool.structures.config import fastjson

TOPIC, QUEUE = "PaymentTopic", 0
LOST_QO = 31  # the crc-mid damage breaks PaymentTopic/0's record at queue offset 31


def doctor(store: Path, *args: str) -> tuple[int, dict]:
    out = run("doctor", store, "--config", CONF, "--json", *args)
    assert out.stderr == "", out.stderr
    return out.returncode, json.loads(out.stdout)


def queue_messages(root: Path) -> dict[tuple[str, int], list[tuple[int, bytes]]]:
    """Each queue's intact messages in queue order: (queue offset, what stays when a record moves)."""
    out: dict[tuple[str, int], list[tuple[int, bytes]]] = {}
    for item in log_rows(open_reader(root, CONF)):
        if isinstance(item, pa.RecordBatch):
            names = ["topic", "queueId", "queueOffset", "sysFlag", "body", "propertiesString"]
            for r in item.select(names).to_pylist():
                if not enters_consume_queue(r["sysFlag"]):  # a transaction's prepared or rolled-back half
                    continue
                out.setdefault((r["topic"], r["queueId"]), []).append((r["queueOffset"], r["body"] +
                                                                       r["propertiesString"].encode()))
    return {k: sorted(v) for k, v in out.items()}


def owed(messages: list[tuple[int, bytes]], committed: int) -> list[bytes]:
    return [m for qo, m in messages if qo >= committed]


def entries(root: Path) -> int:
    return json.loads(run("verify", root, "--config", CONF, "--json").stdout)["queueEntries"]


def write_positions(store: Path, committed: list[int]) -> None:
    """One group per committed offset on PaymentTopic/0, and the schedule service's position per level."""
    table = {f"{TOPIC}@g{c}": {QUEUE: c} for c in committed}
    (store / "config").mkdir(exist_ok=True)
    for name in ("consumerOffset.json", "consumerOffset.json.bak"):
        (store / "config" / name).write_text(fastjson.dumps({"offsetTable": table}))


def test_consumer_groups_before_at_and_after_a_lost_record_are_owed_the_same_surviving_messages(tmp_path):
    """A cut-and-repack renumbered PaymentTopic/0 (31 lost, 32.. moved down one) and left consumerOffset.json
    as it was: a group committed at 32 never received the message that moved to 31."""
    store = damaged_stores(tmp_path, ["crc-mid"])["crc-mid"]
    before = queue_messages(store)[(TOPIC, QUEUE)]
    last = before[-1][0] + 1
    committed = [0, 20, LOST_QO, LOST_QO + 1, LOST_QO + 5, last - 1, last]
    write_positions(store, committed)
    lost = {qo for qo in range(last)} - {qo for qo, _ in before}
    assert lost == {LOST_QO}
    code, plan = doctor(store)
    planned = {(m["group"], m["from"], m["to"]) for m in plan["positionsMoved"] if m["file"] == "consumerOffset.json"}
    code, done = doctor(store, "--apply")
    assert (code, done["status"]) == (0, "mended")
    moved = {(m["group"], m["from"], m["to"]) for m in done["positionsMoved"] if m["file"] == "consumerOffset.json"}
    assert moved == planned == {(f"g{c}", c, c - 1) for c in committed if c > LOST_QO}
    after = queue_messages(store)[(TOPIC, QUEUE)]
    table = fastjson.loads((store / "config" / "consumerOffset.json").read_text())["offsetTable"]
    bak = fastjson.loads((store / "config" / "consumerOffset.json.bak").read_text())["offsetTable"]
    assert bak == table
    for c in committed:
        now = table[f"{TOPIC}@g{c}"][QUEUE]
        assert owed(after, now) == [m for qo, m in before if qo >= c], c
    kept = json.loads(next((store / "lost").glob("*/positions.json")).read_text())
    assert {(m["group"], m["from"], m["to"]) for m in kept if m["file"] == "consumerOffset.json"} == moved


def test_the_stated_loss_of_a_zeroed_range_over_several_records_is_the_loss(tmp_path):
    """3000 bytes zeroed at 20000 of a segment: the plan said 2 records lost where 13 were in the range and the
    queues went from 400 entries to 389."""
    store = fixture_copy(tmp_path)
    corrupt(store, f"commitlog/{SEG:020d}", "zero", 20000, 3000)
    before = queue_messages(store)
    entries_before = entries(store)
    code, plan = doctor(store)
    assert code == 1 and plan["status"] == "plan"
    code, done = doctor(store, "--apply")
    assert (code, done["status"]) == (0, "mended"), done
    after = queue_messages(store)
    gone = sum(len(v) for v in before.values()) - sum(len(v) for v in after.values())
    ledger = [json.loads(line) for line in next((store / "lost").glob("*/ledger.jsonl")).read_text().splitlines()]
    with_entry = [r for r in ledger if r["topic"] is not None]
    assert plan["recordsLost"] == done["recordsLost"] == len(ledger) == entries_before - entries(store)
    assert len(with_entry) == len(ledger) and gone == 0  # the zeroed records never decoded: the entries name them
    assert plan["bytesLost"] == sum(r["storeSize"] for r in ledger)
    assert len(ledger) > 2
    assert all(SEG + 20000 - 400 <= r["commitLogOffset"] < SEG + 23000 for r in ledger), ledger


def test_apply_json_says_mended_and_exits_0_when_it_mended_everything(tmp_path):
    """`--apply --json` said "status": "plan" with exit 0."""
    store = damaged_stores(tmp_path, ["queue-truncated"])["queue-truncated"]
    code, done = doctor(store, "--apply")
    assert (code, done["status"], done["applied"], done["after"]["problems"]) == (0, "mended", True, 0)


def test_a_short_consume_queue_file_is_mended_not_left_at_its_odd_size(tmp_path):
    """A consume-queue file cut to 1003 bytes: "rebuild-queues mends 1 finding", and after --apply the file was
    still 1003 bytes and exit 1."""
    store = fixture_copy(tmp_path)
    queue_file = store / "consumequeue" / TOPIC / "0" / f"{0:020d}"
    corrupt(store, queue_file.relative_to(store), "truncate", 1003)
    code, plan = doctor(store)
    assert code == 1 and "rebuild-queues" in [s["action"] for s in plan["steps"]]
    code, done = doctor(store, "--apply")
    assert (code, done["status"]) == (0, "mended")
    assert queue_file.stat().st_size == 4000
    assert doctor(store)[0] == 0


def test_a_missing_middle_segment_offers_salvage_into_a_new_store_with_its_cost(tmp_path):
    """"cannot mend" (exit 2) without a word of `salvage --into`, which turns the store into a healthy one."""
    store = damaged_stores(tmp_path, ["middle-missing"])["middle-missing"]
    code, plan = doctor(store)
    assert code == 2 and plan["status"] == "unmendable"
    assert plan["salvageInto"] == {"command": f"rmqtool salvage {store} --into NEW", "records": plan["salvageInto"][
        "records"]}
    into = tmp_path / "new"
    out = run("salvage", store, "--config", CONF, "--into", into, "--json")
    assert out.returncode in (0, 1), out.stderr
    assert json.loads(out.stdout)["messages"] == plan["salvageInto"]["records"] > 0
    assert doctor(into)[0] == 0
    text = run("doctor", store, "--config", CONF).stdout
    assert f"`rmqtool salvage {store} --into NEW` writes the" in text


def test_one_flipped_bit_in_an_index_entry_of_the_golden_store_is_mended_and_stays_mended(golden_basic, tmp_path):
    """`rebuild-index` left the files as they were ("3620 keys equal ... nothing to do") while verify still found
    4 unreachable entries and 4 unindexed keys, and the next doctor planned the same step."""
    import shutil

    root = tmp_path / "basic"
    shutil.copytree(golden_basic, root)
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    store, conf = root / "store", root / "broker.conf"
    index_file = store / "index" / "20261122114314613"
    data = bytearray(index_file.read_bytes())
    data[4855] ^= 1 << 6  # the fuzz run's damage: bit 6 of offset 4855
    index_file.write_bytes(bytes(data))
    out = run("doctor", store, "--config", conf, "--apply", "--json")
    done = json.loads(out.stdout)
    assert (out.returncode, done["status"], [s["action"] for s in done["steps"]]) == (0, "mended", ["rebuild-index"])
    again = run("doctor", store, "--config", conf, "--json")
    assert (again.returncode, json.loads(again.stdout)["status"]) == (0, "healthy")


def test_a_checkpoint_too_short_to_read_is_a_finding_the_reset_mends_not_a_refusal_of_the_store(tmp_path):
    """A checkpoint cut to 14 bytes: doctor, --apply, verify and recover all refused the store (exit 2)."""
    store = fixture_copy(tmp_path)
    corrupt(store, "checkpoint", "truncate", 14)
    out = run("verify", store, "--config", CONF, "--json")
    assert out.returncode == 1 and json.loads(out.stdout)["byKind"] == {"checkpoint-unreadable": 1}
    code, plan = doctor(store)
    assert (code, [s["action"] for s in plan["steps"]]) == (1, ["reset-checkpoint"])
    code, done = doctor(store, "--apply")
    assert (code, done["status"]) == (0, "mended")
    assert (store / "checkpoint").stat().st_size == 4096 and doctor(store)[0] == 0
