"""`store.files` is the one owner of `lock`, `abort` and the journals a killed writer leaves (engine/storefiles.py).

Before it, four places handled the lock and each refused a held store in its own words: `append`, `import`,
`rebuild`, `clean` and `consumers --reset` said "locked by another process" while `recover` and `doctor --apply`
named the holder; `clean` and `recover` finished a killed process's leftovers in their own order.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from cli_helpers import CONF, ROOT, fixture_copy, run
from lockholder import lock_held_elsewhere

from rmqtool.engine.opening import open_store
from rmqtool.engine.storefiles import StoreFiles
from rmqtool.errors import RmqError

OWNERS = {"rmqtool/engine/storefiles.py", "rmqtool/files/lock.py", "rmqtool/files/swap.py",
          "rmqtool/engine/staging.py", "rmqtool/engine/journal.py"}
OWNED = {"lock_holder", "StoreLock", "create_abort", "remove_abort", "finish_swap", "finish_pending",
         "finish_deletions", "discard_staging"}


def _snapshot(store: Path) -> dict[str, bytes]:
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file()}


def calls_outside_owners(package: Path) -> list[str]:
    """`module:line name` wherever a module outside OWNERS calls one of the lock, abort or settle primitives."""
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = str(path.relative_to(package.parent))
        if rel in OWNERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if name in OWNED:
                    found.append(f"{rel}:{node.lineno} {name}")
    return found


def test_lock_abort_and_leftovers_are_handled_only_by_the_store_files():
    assert calls_outside_owners(ROOT / "rmqtool") == []


def test_a_new_caller_of_a_lock_primitive_is_caught(tmp_path):
    pkg = tmp_path / "rmqtool"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "ops" / "x.py").write_text("from rmqtool.files import lock\nlock.StoreLock(p)\ncreate_abort(q)\n")
    (pkg / "engine").mkdir()
    (pkg / "engine" / "storefiles.py").write_text("StoreLock(p)\n")
    assert calls_outside_owners(pkg) == ["rmqtool/ops/x.py:2 StoreLock", "rmqtool/ops/x.py:3 create_abort"]


@pytest.fixture
def held_store(tmp_path):
    store = fixture_copy(tmp_path)
    rows = tmp_path / "rows.jsonl"
    assert run("export", store, "--config", CONF, "--out", rows).returncode == 0
    return store, rows


def test_every_writer_refuses_a_held_store_naming_the_holder_and_changes_nothing(held_store):
    store, rows = held_store
    writers = [("append", store, "--config", CONF, "--topic", "T", "--body", "x"),
               ("import", store, rows, "--config", CONF),
               ("recover", store, "--config", CONF),
               ("doctor", store, "--config", CONF, "--apply"),
               ("rebuild", store, "--config", CONF, "--apply"),
               ("clean", store, "--config", CONF, "--reserved-hours", "0"),
               ("consumers", store, "--reset", "g", "--topic", "OrderTopic", "--to-latest")]
    before = _snapshot(store)
    with lock_held_elsewhere(store / "lock"):
        for args in writers:
            out = run(*args)
            assert out.returncode == 2, (args[0], out.stderr)
            assert re.fullmatch(rf"rmqtool: error: store {re.escape(str(store))} is locked by process \d+ "
                                r"\(a running broker\?\): nothing changed\n", out.stderr), (args[0], out.stderr)
    assert _snapshot(store) == before


def test_settle_finishes_a_clean_a_killed_process_left(tmp_path):
    store = fixture_copy(tmp_path)
    opened = open_store(store, CONF)
    victim = sorted((store / "index").iterdir())[0]
    (store / ".rmqtool-clean-journal").write_text(json.dumps([str(victim)]))
    opened.files.settle()
    assert not victim.exists() and not (store / ".rmqtool-clean-journal").exists()


def test_refuse_unclean_names_recover_and_mark_closed_clears_it(tmp_path):
    files = StoreFiles(open_store(fixture_copy(tmp_path), CONF).paths)
    files.mark_open()
    with pytest.raises(RmqError, match=r"was not shut down cleanly \(abort file present\): run `rmqtool recover`"):
        files.refuse_unclean()
    files.mark_closed()
    files.refuse_unclean()
    assert files.state() == {"abortFile": False, "unfinishedSwap": False, "interruptedWrite": None,
                             "lockHeldBy": None}
