"""Offline group admin on a store the real broker wrote: a reset of one queue, a group's offsets cloned to another
(mqadmin cloneGroupOffset), a group's offsets deleted; each written as the broker writes consumerOffset.json, under
the store's lock, all or nothing at every point a kill can land."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import CONSUMER_OFFSETS, run, tree_digest, writable_copy
from lockholder import lock_held_elsewhere

from rmqtool.engine.reader import open_reader
from rmqtool.errors import NotFound, RmqError
from rmqtool.ops.offset_admin import clone_offsets, delete_offsets, reset_offsets
from rmqtool.structures.config import offsets, persist

# What a 4.9.7 broker persists (cli_helpers), with one group more: fastjson's pretty format, queue ids as bare
# integers, a tab per level.
BROKER_OFFSETS = CONSUMER_OFFSETS.replace('\n\t\t}\n\t}\n}',
                                          '\n\t\t},\n\t\t"OrderTopic@billing-v2":{0:1,5:9\n\t\t}\n\t}\n}')
AUDIT = '\t\t"PaymentTopic@audit":{0:135,1:0\n\t\t}'


@pytest.fixture
def store(golden_basic: Path, tmp_path: Path) -> Path:
    dst = writable_copy(golden_basic / "store", tmp_path / "store")
    (dst / "config" / "consumerOffset.json").write_text(BROKER_OFFSETS)
    return dst


def _file(store: Path, suffix: str = "") -> Path:
    return store / "config" / f"consumerOffset.json{suffix}"


def _others(store: Path) -> dict[str, str]:
    """Every file of the store but the offset table's trio."""
    return {k: v for k, v in tree_digest(store).items() if not k.startswith("config/consumerOffset.json")}


# ---- reset of one queue ---------------------------------------------------------------------------
def test_reset_with_queue_changes_every_queue_of_the_topic_instead_of_only_that_one(store):
    plan = reset_offsets(open_reader(store), "billing", "OrderTopic", queue=2, to_offset=40)
    assert [(r["queueId"], r["oldOffset"], r["newOffset"]) for r in plan.rows] == [(2, 10, 40)]
    assert _file(store).read_text() == BROKER_OFFSETS.replace("{0:250,1:66,2:10,3:80", "{0:250,1:66,2:40,3:80")
    assert _file(store, ".bak").read_text() == BROKER_OFFSETS


def test_reset_of_one_queue_to_a_time_answers_as_query_time_on_that_queue(store, golden_expected):
    times = sorted(m["storeTimestamp"] for m in golden_expected["messages"] if m["topic"] == "OrderTopic")
    when = times[len(times) // 3] + 1
    plan = reset_offsets(open_reader(store), "billing", "OrderTopic", queue=3, to_time=when)
    answer = json.loads(run("query", store, "--topic", "OrderTopic", "--queue", 3, "--time", when, "--json").stdout)
    assert [(r["queueId"], r["newOffset"]) for r in plan.rows] == [(3, answer["queueOffset"])]
    assert offsets.load(store).of("OrderTopic", "billing").queues == {0: 250, 1: 66, 2: 10, 3: answer["queueOffset"]}


def test_reset_of_a_queue_the_topic_lacks_is_refused_naming_its_queues(store):
    before = tree_digest(store)
    with pytest.raises(RmqError, match=r"--queue 9: topic OrderTopic has queues 0, 1, 2, 3; nothing was changed"):
        reset_offsets(open_reader(store), "billing", "OrderTopic", queue=9, latest=True)
    assert tree_digest(store) == before


# ---- clone -----------------------------------------------------------------------------------------
def test_clone_to_a_new_group_appends_its_entries_and_leaves_every_other_byte(store):
    plan = clone_offsets(open_reader(store), "billing", "fresh")
    want = BROKER_OFFSETS.replace('\n\t}\n}', ',\n\t\t"GoneTopic@fresh":{0:5\n\t\t},'
                                              '\n\t\t"OrderTopic@fresh":{0:250,1:66,2:10,3:80\n\t\t}\n\t}\n}')
    assert _file(store).read_text() == want
    assert _file(store, ".bak").read_text() == BROKER_OFFSETS
    assert not _file(store, ".tmp").exists()
    assert [(r["topic"], r["queueId"], r["oldOffset"], r["newOffset"]) for r in plan.rows] == [
        ("GoneTopic", 0, None, 5), ("OrderTopic", 0, None, 250), ("OrderTopic", 1, None, 66),
        ("OrderTopic", 2, None, 10), ("OrderTopic", 3, None, 80)]
    assert plan.changes == 5


def test_clone_onto_a_group_replaces_its_entry_whole_in_its_place_and_keeps_its_other_topics(store):
    plan = clone_offsets(open_reader(store), "billing", "billing-v2", "OrderTopic")
    assert _file(store).read_text() == BROKER_OFFSETS.replace('"OrderTopic@billing-v2":{0:1,5:9',
                                                              '"OrderTopic@billing-v2":{0:250,1:66,2:10,3:80')
    assert AUDIT in _file(store).read_text()
    assert [(r["queueId"], r["oldOffset"], r["newOffset"]) for r in plan.rows] == [
        (0, 1, 250), (1, None, 66), (2, None, 10), (3, None, 80), (5, 9, None)]


def test_clone_of_a_group_without_offsets_on_the_topic_is_not_found_and_writes_nothing(store):
    before = tree_digest(store)
    with pytest.raises(NotFound, match=r"group audit has no committed offsets on topic OrderTopic .*"
                                       r"\(its topics: PaymentTopic\)"):
        clone_offsets(open_reader(store), "audit", "x", "OrderTopic")
    with pytest.raises(NotFound, match=r"group nobody has no committed offsets in .*\(groups: audit, billing, "):
        clone_offsets(open_reader(store), "nobody", "x")
    assert tree_digest(store) == before


def test_clone_onto_itself_is_refused(store):
    with pytest.raises(RmqError, match="a group cannot be cloned onto itself"):
        clone_offsets(open_reader(store), "billing", "billing")


# ---- delete ----------------------------------------------------------------------------------------
def test_delete_of_a_group_removes_every_entry_of_it_and_leaves_every_other_byte(store):
    plan = delete_offsets(open_reader(store), "billing")
    assert _file(store).read_text() == (
        '{\n\t"offsetTable":{\n' + AUDIT + ',\n\t\t"OrderTopic@billing-v2":{0:1,5:9\n\t\t}\n\t}\n}')
    assert _file(store, ".bak").read_text() == BROKER_OFFSETS
    assert [(r["topic"], r["queueId"], r["oldOffset"], r["newOffset"]) for r in plan.rows] == [
        ("GoneTopic", 0, 5, None), ("OrderTopic", 0, 250, None), ("OrderTopic", 1, 66, None),
        ("OrderTopic", 2, 10, None), ("OrderTopic", 3, 80, None)]


def test_delete_of_one_topic_keeps_the_groups_other_topics(store):
    delete_offsets(open_reader(store), "billing", "GoneTopic")
    assert _file(store).read_text() == BROKER_OFFSETS.replace('\t\t"GoneTopic@billing":{0:5\n\t\t},\n', "")


def test_delete_of_the_last_entry_leaves_the_brokers_empty_table(store):
    _file(store).write_text('{\n\t"offsetTable":{\n' + AUDIT + '\n\t}\n}')
    delete_offsets(open_reader(store), "audit", "PaymentTopic")
    assert _file(store).read_text() == '{\n\t"offsetTable":{}\n}'


def test_delete_of_an_absent_group_or_topic_is_not_found_and_writes_nothing(store):
    before = tree_digest(store)
    with pytest.raises(NotFound, match=r"group retired has no committed offsets in "):
        delete_offsets(open_reader(store), "retired")
    with pytest.raises(NotFound, match=r"group audit has no committed offsets on topic OrderTopic"):
        delete_offsets(open_reader(store), "audit", "OrderTopic")
    assert tree_digest(store) == before


# ---- what every action shares: dry run, the lock ---------------------------------------------------
ACTIONS = {
    "reset one queue": lambda r, **kw: reset_offsets(r, "billing", "OrderTopic", queue=1, earliest=True, **kw),
    "clone": lambda r, **kw: clone_offsets(r, "billing", "billing-v2", **kw),
    "delete": lambda r, **kw: delete_offsets(r, "billing", **kw),
}


@pytest.mark.parametrize("action", list(ACTIONS))
def test_a_dry_run_changes_no_byte_of_the_store(store, action):
    before = tree_digest(store)
    plan = ACTIONS[action](open_reader(store), dry_run=True)
    assert plan.changes > 0
    assert tree_digest(store) == before


@pytest.mark.parametrize("action", list(ACTIONS))
def test_a_change_while_another_process_holds_the_lock_is_refused(store, action):
    before = tree_digest(store)
    with lock_held_elsewhere(store / "lock"), pytest.raises(RmqError, match=r"is locked by process \d+ "):
        ACTIONS[action](open_reader(store))
    assert tree_digest(store) == before


# ---- all or nothing at every kill point --------------------------------------------------------------
class _Killed(BaseException):
    """Where a SIGKILL would have stopped the process: nothing after it runs but `finally` blocks, which
    leave the table's files as they are."""


def _kill_at(monkeypatch, step: str, before: bool) -> list[bool]:
    """The write stops at one of persist.save's steps, just before it or just after it: the fsync of `tmp` (the
    new text written) or of `bak` (the old text copied), the `rename`, the fsync of the `folder` after it."""
    fsync, rename, fired = persist.fsync_path, persist.os.replace, [False]

    def at(name: str, real, *args):
        if name == step and before:
            fired[0] = True
            raise _Killed
        real(*args)
        if name == step:
            fired[0] = True
            raise _Killed

    monkeypatch.setattr(persist, "fsync_path",
                        lambda path: at("folder" if path.is_dir() else path.suffix.lstrip("."), fsync, path))
    monkeypatch.setattr(persist.os, "replace", lambda src, dst: at("rename", rename, src, dst))
    return fired


BROKEN = {"a good file": None, "an empty file (loaded from .bak)": "",
          "a broken file (loaded from .bak)": '{"offsetTable":{"Order'}
# A table loaded from its .bak is written without copying the broken file over the .bak: no `bak` step. (The
# broker copies it: a kill before the rename would then leave no table to load.)
KILL_POINTS = [(state, step, before) for state in BROKEN for step in ("tmp", "bak", "rename", "folder")
               for before in (True, False) if step != "bak" or BROKEN[state] is None]


@pytest.mark.parametrize("file_state, step, before", KILL_POINTS)
@pytest.mark.parametrize("action", list(ACTIONS))
def test_a_write_killed_at_any_point_loads_the_old_table_or_the_new_one(store, monkeypatch, action, file_state,
                                                                        step, before):
    if BROKEN[file_state] is not None:  # the broker left the table in its .bak
        _file(store, ".bak").write_text(BROKER_OFFSETS)
        _file(store).write_text(BROKEN[file_state])
    old = offsets.load(store).doc
    done = writable_copy(store, store.parent / "done")
    ACTIONS[action](open_reader(done))
    new = offsets.load(done).doc
    others = _others(store)
    fired = _kill_at(monkeypatch, step, before)
    with pytest.raises(_Killed):
        ACTIONS[action](open_reader(store))
    assert fired[0]
    monkeypatch.undo()
    assert offsets.load(store).doc in (old, new)
    assert _others(store) == others
    if offsets.load(store).doc == old:  # the operator runs it again: it ends where an unbroken run ends
        ACTIONS[action](open_reader(store))
    assert _file(store).read_bytes() == _file(done).read_bytes()


def test_a_write_over_a_broken_file_copies_it_over_the_bak_the_table_was_loaded_from(store):
    _file(store, ".bak").write_text(BROKER_OFFSETS)
    _file(store).write_text('{"offsetTable":{"Order')
    delete_offsets(open_reader(store), "billing-v2")
    assert _file(store, ".bak").read_text() == BROKER_OFFSETS
    assert _file(store).read_text() == BROKER_OFFSETS.replace(',\n\t\t"OrderTopic@billing-v2":{0:1,5:9\n\t\t}', "")
