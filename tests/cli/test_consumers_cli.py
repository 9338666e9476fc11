"""`consumers`, `decode config`, and consumption in `query`, run as an operator runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run, tree_digest, writable_copy
from lockholder import lock_held_elsewhere
from stores5x import make_5x_checkpoint_store

from rmqtool.structures.config import fastjson

OFFSETS = ('{\n\t"offsetTable":{\n\t\t"OrderTopic@billing":{0:250,1:66\n\t\t},'
           '\n\t\t"PaymentTopic@audit":{0:135\n\t\t}\n\t}\n}')


@pytest.fixture
def store(golden_basic: Path, tmp_path: Path) -> Path:
    dst = writable_copy(golden_basic / "store", tmp_path / "store")
    (dst / "config" / "consumerOffset.json").write_text(OFFSETS)
    return dst


def _error_line(out) -> str:
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1, out.stderr
    return out.stderr


def test_consumers_json_lists_every_queue_of_each_groups_topics_and_exits_0_when_none_is_flagged(store):
    out = run("consumers", store, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [(g["group"], g["lag"]) for g in doc["groups"]] == [("billing", 40), ("audit", 0)]
    audit = doc["groups"][1]
    assert (audit["lag"], audit["retryMessages"], audit["dlqMessages"]) == (0, 0, 0)
    assert [(q["queueId"], q["committedOffset"], q["state"]) for q in audit["queues"]] == [
        (0, 135, "ok"), (1, None, "no-offset"), (2, None, "no-offset"), (3, None, "no-offset")]
    assert doc["flaggedQueues"] == 0


def test_consumers_exits_1_when_a_group_is_past_a_queues_max(store):
    (store / "config" / "consumerOffset.json").write_text('{"offsetTable":{"OrderTopic@billing":{1:67}}}')
    out = run("consumers", store)
    assert out.returncode == 1
    assert "past-max" in out.stdout
    assert "the group claims messages the store does not hold" in " ".join(out.stderr.split())


def test_consumers_without_an_offset_file_says_0_groups(store):
    (store / "config" / "consumerOffset.json").unlink()
    out = run("consumers", store)
    assert out.returncode == 0 and "0 groups" in out.stderr


def test_group_and_topic_names_from_the_file_are_escaped_on_the_terminal(store):
    (store / "config" / "consumerOffset.json").write_text('{"offsetTable":{"OrderTopic@ev\\u001b[31mil":{0:1}}}')
    out = run("consumers", store)
    assert out.returncode == 0 and "\x1b" not in out.stdout and "ev\\x1b[3" in out.stdout


@pytest.mark.parametrize("args, message", [
    (["--reset", "billing", "--to-earliest"], "--reset needs --topic"),
    (["--reset", "billing", "--topic", "OrderTopic"], "give exactly one of --to-time"),
    (["--reset", "billing", "--topic", "OrderTopic", "--to-earliest", "--to-latest"], "give exactly one of"),
    (["--reset", "billing", "--topic", "OrderTopic", "--to-time", "yesterday"], "--to-time 'yesterday' is neither"),
    (["--to-latest"], "--to-latest goes with --reset GROUP"),
    (["--reset", "billing", "--group", "audit", "--topic", "OrderTopic", "--to-latest"], "name different groups"),
    (["--reset", "billing", "--topic", "OrderTopic", "--to-offset", "70"], "outside queue OrderTopic/1 (0..66)"),
])
def test_a_bad_reset_is_one_line_exit_2_and_changes_nothing(store, args, message):
    before = (store / "config" / "consumerOffset.json").read_bytes()
    assert message in _error_line(run("consumers", store, *args))
    assert (store / "config" / "consumerOffset.json").read_bytes() == before
    assert not (store / "config" / "consumerOffset.json.bak").exists()


def test_reset_to_a_time_in_seconds_is_refused_and_changes_no_offset(store):
    before = (store / "config" / "consumerOffset.json").read_bytes()
    out = run("consumers", store, "--reset", "billing", "--topic", "OrderTopic", "--to-time", "1795347811")
    assert _error_line(out) == ("rmqtool: error: --to-time 1795347811 reads as seconds (2026-11-22T11:43:31.000Z); as "
                                "milliseconds it is 1970-01-21T18:42:27.811Z: give milliseconds or ISO 8601, or "
                                "--time-unit s\n")
    assert (store / "config" / "consumerOffset.json").read_bytes() == before
    assert not (store / "config" / "consumerOffset.json.bak").exists()


def test_reset_to_a_negative_time_is_refused_and_changes_no_offset(store):
    before = (store / "config" / "consumerOffset.json").read_bytes()
    out = run("consumers", store, "--reset", "billing", "--topic", "OrderTopic", "--to-time", "-5", "--time-unit", "ms")
    assert "--to-time -5 is negative" in _error_line(out)
    assert (store / "config" / "consumerOffset.json").read_bytes() == before


def test_reset_to_a_time_in_seconds_with_time_unit_s_is_that_time_in_milliseconds(store, golden_expected):
    times = sorted(m["storeTimestamp"] for m in golden_expected["messages"])
    seconds = times[len(times) // 2] // 1000
    common = ["consumers", store, "--reset", "billing", "--topic", "OrderTopic", "--dry-run", "--json"]
    by_seconds = run(*common, "--to-time", seconds, "--time-unit", "s")
    assert by_seconds.returncode == 0, by_seconds.stderr
    assert json.loads(by_seconds.stdout) == json.loads(run(*common, "--to-time", seconds * 1000).stdout)


def test_reset_while_a_broker_holds_the_lock_is_refused(store):
    with lock_held_elsewhere(store / "lock"):
        assert "is locked by process " in _error_line(
            run("consumers", store, "--reset", "billing", "--topic", "OrderTopic", "--to-latest"))
    assert (store / "config" / "consumerOffset.json").read_text() == OFFSETS


def test_reset_dry_run_prints_old_and_new_then_the_reset_writes_them(store):
    dry = run("consumers", store, "--reset", "billing", "--topic", "OrderTopic", "--to-latest", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert [(q["oldOffset"], q["newOffset"]) for q in plan["queues"]] == [(250, 290), (66, 66), (None, 74),
                                                                          (None, 70)]
    assert plan["dryRun"] is True and (store / "config" / "consumerOffset.json").read_text() == OFFSETS
    out = run("consumers", store, "--reset", "billing", "--topic", "OrderTopic", "--to-latest")
    assert out.returncode == 0 and "3 queues changed" in out.stderr
    back = json.loads(run("decode", "config", store, "consumerOffset.json", "--json").stdout)["files"][0]
    assert back["document"]["offsetTable"]["OrderTopic@billing"] == {"0": 290, "1": 66, "2": 74, "3": 70}
    assert back["bak"]["differences"] == ["offsetTable.OrderTopic@billing.0: 250 -> 290",
                                          "offsetTable.OrderTopic@billing.2: not in .bak",
                                          "offsetTable.OrderTopic@billing.3: not in .bak"]


def test_reset_of_a_5x_store_is_refused(tmp_path, fixture_store):
    store = tmp_path / "v5"
    make_5x_checkpoint_store(fixture_store, store)
    topic = sorted(p.name for p in (store / "consumequeue").iterdir())[0]
    out = run("consumers", store, "--reset", "g", "--topic", topic, "--to-latest")
    assert "rmqtool writes only 4.x stores" in _error_line(out)
    assert not (store / "config" / "consumerOffset.json").exists()


def test_decode_config_reads_unquoted_keys_reports_bak_and_tmp(store):
    cfg = store / "config"
    (cfg / "consumerOffset.json.bak").write_text(OFFSETS.replace("0:250", "0:240"))
    (cfg / "consumerOffset.json.tmp").write_text("{")
    out = run("decode", "config", store, "--json")
    assert out.returncode == 0, out.stderr
    files = {f["file"]: f for f in json.loads(out.stdout)["files"]}
    assert sorted(files) == ["consumerOffset.json", "delayOffset.json"]
    offsets_file = files["consumerOffset.json"]
    assert offsets_file["loadedFrom"] == "consumerOffset.json" and offsets_file["tmpPresent"] is True
    assert offsets_file["document"]["offsetTable"]["OrderTopic@billing"] == {"0": 250, "1": 66}
    assert offsets_file["bak"] == {"present": True, "sameAsFile": False,
                                   "differences": ["offsetTable.OrderTopic@billing.0: 240 -> 250"],
                                   "moreDifferences": 0}
    assert files["delayOffset.json"]["document"] == {"offsetTable": {}}
    table = run("decode", "config", store)
    assert table.returncode == 0 and "billing" in table.stdout and "rename did not happen" in table.stdout


def test_decode_config_of_a_file_that_loads_from_nowhere_exits_1(store):
    (store / "config" / "consumerOffset.json").write_text("{broken")
    out = run("decode", "config", store, "consumerOffset.json", "--json")
    assert out.returncode == 1
    assert "not a config document" in json.loads(out.stdout)["files"][0]["error"]


def test_decode_config_of_an_unknown_name_lists_the_files(store):
    assert "files: consumerOffset.json, delayOffset.json" in _error_line(run("decode", "config", store, "nope.json"))


def test_query_says_which_groups_consumed_each_message(store):
    out = run("query", store, "--topic", "OrderTopic", "--queue", "0", "--queue-offset", "249", "--count", "2",
              "--json")
    assert out.returncode == 0, out.stderr
    got = [m["consumption"] for m in json.loads(out.stdout)["messages"]]
    assert got == [{"groups": [{"group": "billing", "committedOffset": 250, "consumed": True}]},
                   {"groups": [{"group": "billing", "committedOffset": 250, "consumed": False}]}]
    card = run("query", store, "--topic", "OrderTopic", "--queue", "0", "--queue-offset", "250")
    assert "billing: not yet (committed 250)" in card.stdout
    untracked = run("query", store, "--topic", "AuditLogTopic", "--queue", "0", "--queue-offset", "0", "--json")
    assert "consumption" not in json.loads(untracked.stdout)["messages"][0]


def test_query_tells_whether_the_schedule_service_delivered_a_delayed_message(tmp_path):
    store = tmp_path / "store"
    for i in range(3):
        out = run("append", store, "--topic", "T", "--delay-level", "2", "--body", f"m{i}", "--json")
        assert out.returncode == 0, out.stderr
    fastjson_text = fastjson.dumps({"offsetTable": {2: 2}})
    (store / "config" / "delayOffset.json").write_text(fastjson_text)
    out = run("query", store, "--topic", "SCHEDULE_TOPIC_XXXX", "--queue", "1", "--queue-offset", "1", "--count", "2",
              "--json")
    assert out.returncode == 0, out.stderr
    got = [m["consumption"] for m in json.loads(out.stdout)["messages"]]
    assert got == [{"delayLevel": 2, "deliverOffset": 2, "delivered": True},
                   {"delayLevel": 2, "deliverOffset": 2, "delivered": False}]


@pytest.mark.parametrize("args, message", [
    (["--reset", "billing", "--topic", "OrderTopic", "--queue", "9", "--to-offset", "1"],
     "rmqtool: error: --queue 9: topic OrderTopic has queues 0, 1, 2, 3; nothing was changed\n"),
    (["--reset", "billing", "--topic", "OrderTopic", "--queue", "-1", "--to-offset", "1"],
     "rmqtool: error: Invalid value for '--queue': -1 is out of range (0..9223372036854775807). "
     "(see 'rmqtool consumers --help')\n"),
    (["--queue", "1"], "rmqtool: error: --queue goes with --reset GROUP\n"),
    (["--clone", "billing", "--to", "billing"], "rmqtool: error: --clone billing --to billing: a group cannot be "
                                                "cloned onto itself\n"),
    (["--clone", "billing"], "rmqtool: error: --clone SRC needs --to DST (the group that gets the offsets)\n"),
    (["--to", "x"], "rmqtool: error: --to DST goes with --clone SRC\n"),
    (["--reset", "billing", "--topic", "OrderTopic", "--to-latest", "--clone", "billing", "--to", "x"],
     "rmqtool: error: --reset and --clone are different actions: give one\n"),
    (["--clone", "billing", "--to", "x", "--delete", "audit"],
     "rmqtool: error: --clone and --delete are different actions: give one\n"),
    (["--reset", "billing", "--topic", "OrderTopic", "--to-latest", "--delete", "audit"],
     "rmqtool: error: --reset and --delete are different actions: give one\n"),
    (["--delete", "audit", "--to-latest"], "rmqtool: error: --to-latest goes with --reset GROUP\n"),
    (["--delete", "audit", "--group", "billing"], "rmqtool: error: --group billing and --delete audit name different "
                                                  "groups\n"),
    (["--dry-run"], "rmqtool: error: --dry-run goes with --reset, --clone or --delete\n"),
])
def test_a_bad_clone_delete_or_queue_reset_is_one_line_exit_2_and_changes_no_byte(store, args, message):
    before = tree_digest(store)
    assert _error_line(run("consumers", store, *args)) == message
    assert tree_digest(store) == before


@pytest.mark.parametrize("args, message", [
    (["--clone", "nobody", "--to", "x"], "group nobody has no committed offsets in "),
    (["--clone", "audit", "--to", "x", "--topic", "OrderTopic"],
     "group audit has no committed offsets on topic OrderTopic in "),
    (["--delete", "retired"], "group retired has no committed offsets in "),
    (["--delete", "audit", "--topic", "OrderTopic"], "group audit has no committed offsets on topic OrderTopic in "),
])
def test_clone_or_delete_of_a_group_without_offsets_is_one_line_exit_3_and_changes_no_byte(store, args, message):
    before = tree_digest(store)
    out = run("consumers", store, *args)
    assert out.returncode == 3 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith("rmqtool: not found: " + message)
    assert tree_digest(store) == before


@pytest.mark.parametrize("args", [["--clone", "billing", "--to", "x"], ["--delete", "billing"],
                                  ["--reset", "billing", "--topic", "OrderTopic", "--queue", "0", "--to-offset", "1"]])
def test_clone_delete_or_queue_reset_while_a_broker_holds_the_lock_is_refused(store, args):
    before = tree_digest(store)
    with lock_held_elsewhere(store / "lock"):
        assert "is locked by process " in _error_line(run("consumers", store, *args))
    assert tree_digest(store) == before


def test_clone_prints_each_queues_old_and_new_offset_and_writes_the_brokers_text(store):
    dry = run("consumers", store, "--clone", "billing", "--to", "audit", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert (store / "config" / "consumerOffset.json").read_text() == OFFSETS
    out = run("consumers", store, "--clone", "billing", "--to", "audit")
    assert out.stdout == dry.stdout.replace("would copy", "copied")
    assert [line.split() for line in out.stdout.splitlines()[4:-1]] == [
        ["│", "audit", "│", "OrderTopic", "│", "0", "│", "-", "│", "250", "│"],
        ["│", "audit", "│", "OrderTopic", "│", "1", "│", "-", "│", "66", "│"]]
    assert out.stderr == f"2 queues changed in {store}/config/consumerOffset.json (the old text is in its .bak)\n"
    assert (store / "config" / "consumerOffset.json").read_text() == OFFSETS.replace(
        "\n\t}\n}", ',\n\t\t"OrderTopic@audit":{0:250,1:66\n\t\t}\n\t}\n}')
    assert (store / "config" / "consumerOffset.json.bak").read_text() == OFFSETS


def test_delete_json_lists_each_removed_queue(store):
    dry = run("consumers", store, "--delete", "billing", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    doc = json.loads(dry.stdout)
    assert {k: doc[k] for k in ("action", "group", "topic", "dryRun", "changed")} == {
        "action": "delete", "group": "billing", "topic": None, "dryRun": True, "changed": 0}
    assert doc["queues"] == [
        {"group": "billing", "topic": "OrderTopic", "queueId": 0, "oldOffset": 250, "newOffset": None},
        {"group": "billing", "topic": "OrderTopic", "queueId": 1, "oldOffset": 66, "newOffset": None}]
    table = run("consumers", store, "--delete", "billing")
    assert table.returncode == 0 and "(removed)" in table.stdout
    assert (store / "config" / "consumerOffset.json").read_text() == (
        '{\n\t"offsetTable":{\n\t\t"PaymentTopic@audit":{0:135\n\t\t}\n\t}\n}')
