"""`rebuild`: queues and index built again from the log the broker wrote, compared, and swapped in under a journal
that a kill at any rename leaves for the next writer to finish."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_helpers import run, writable_copy

from rmqtool.files import swap
from rmqtool.ops.rebuild import rebuild


@pytest.fixture
def store(golden_basic: Path, tmp_path: Path) -> Path:
    return writable_copy(golden_basic / "store", tmp_path / "store")


@pytest.fixture
def conf(golden_basic: Path) -> Path:
    return golden_basic / "broker.conf"


def _files(root: Path, folder: str) -> dict[str, bytes]:
    base = root / folder
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def _rebuild(store: Path, conf: Path, *args: str):
    out = run("rebuild", store, "--config", conf, "--json", *args)
    return out.returncode, json.loads(out.stdout) if out.stdout.strip() else out.stderr


def test_a_store_whose_queues_and_index_match_its_log_is_left_alone(store, conf, golden_basic):
    code, doc = _rebuild(store, conf, "--apply")
    assert code == 0 and doc["changes"] is False and doc["applied"] is False
    assert doc["index"] == {"keysEqual": 3620, "keysMissing": 0, "keysExtra": 0, "filesBefore": 15, "filesAfter": 15}
    assert _files(store, "consumequeue") == _files(golden_basic / "store", "consumequeue")
    assert not (store / ".rebuild").exists() and not (store / "lost").exists()


def test_a_deleted_queue_folder_is_reported_then_rebuilt_byte_for_byte(store, conf, golden_basic):
    for p in sorted((store / "consumequeue" / "OrderTopic" / "1").iterdir()):
        p.unlink()
    (store / "consumequeue" / "OrderTopic" / "1").rmdir()
    code, doc = _rebuild(store, conf, "--queues")
    assert code == 1 and doc["queues"] == [{"topic": "OrderTopic", "queueId": 1, "equal": 0, "missing": 66, "extra": 0,
                                            "different": 0}]
    assert not (store / "consumequeue" / "OrderTopic" / "1").exists()  # compared only: nothing changed
    code, doc = _rebuild(store, conf, "--queues", "--apply")
    assert code == 0 and doc["applied"] is True
    assert _files(store, "consumequeue") == _files(golden_basic / "store", "consumequeue")
    lost = Path(doc["lost"])
    assert lost.parent == store / "lost" and not (lost / "consumequeue" / "OrderTopic" / "1").exists()
    assert (lost / "consumequeue" / "OrderTopic" / "0").is_dir()


def test_a_queue_with_extra_entries_is_cut_back_to_its_log(store, conf, golden_basic):
    queue = store / "consumequeue" / "PaymentTopic" / "2"
    last = sorted(queue.iterdir())[-1]
    data = bytearray(last.read_bytes())
    written = 109 * 20 - int(last.name)  # PaymentTopic/2 holds 109 entries
    data[written : written + 60] = data[written - 20 : written] * 3  # the last entry, three times more
    last.write_bytes(bytes(data))
    code, doc = _rebuild(store, conf, "--queues")
    assert code == 1 and doc["entriesExtra"] == 3 and doc["entriesMissing"] == 0 and doc["queuesChanged"] == 1
    assert _rebuild(store, conf, "--queues", "--apply")[0] == 0
    assert _files(store, "consumequeue") == _files(golden_basic / "store", "consumequeue")


def test_a_truncated_index_is_rebuilt_and_its_keys_found_again(store, conf, golden_expected):
    names = sorted((store / "index").iterdir())
    for p in names[-3:]:
        p.unlink()
    code, doc = _rebuild(store, conf, "--index")
    assert code == 1 and doc["index"]["keysMissing"] > 0 and doc["index"]["keysExtra"] == 0
    assert _rebuild(store, conf, "--index", "--apply")[0] == 0
    verify = json.loads(run("verify", store, "--config", conf, "--json").stdout)
    assert verify["problems"] == 0
    code, doc = _rebuild(store, conf, "--index")
    assert code == 0 and doc["index"]["keysEqual"] == 3620
    newest = [m for m in golden_expected["messages"] if "KEYS" in m["properties"]][-1]
    key = newest["properties"]["KEYS"].split(" ")[0]
    found = json.loads(run("query", store, "--config", conf, "--topic", newest["topic"], "--key", key, "--json").stdout)
    assert newest["commitLogOffset"] in [m["commitLogOffset"] for m in found["messages"]]


class Killed(BaseException):
    """What a SIGKILL between two renames looks like to the code after it: nothing more runs."""


_APPEND = ["append", "--topic", "OrderTopic", "--body", "x"]


@pytest.mark.parametrize("renames_done, reopen", [(0, ["rebuild"]), (1, ["recover"]), (2, _APPEND), (3, ["rebuild"]),
                                                  (1, _APPEND), (3, ["recover"])])
def test_a_swap_killed_after_any_rename_is_finished_by_the_next_writer(store, conf, golden_basic, monkeypatch,
                                                                      renames_done, reopen):
    for p in sorted((store / "consumequeue" / "OrderTopic" / "1").iterdir()):
        p.unlink()
    (store / "index" / sorted(os.listdir(store / "index"))[-1]).unlink()
    real_rename, done = swap._rename, []

    def rename(src, dst):
        if len(done) == renames_done:
            raise Killed
        real_rename(src, dst)
        done.append(dst)

    monkeypatch.setattr(swap, "_rename", rename)
    with pytest.raises(Killed):
        rebuild(store, conf, apply=True)
    monkeypatch.setattr(swap, "_rename", real_rename)
    assert (store / ".rebuild" / swap.JOURNAL).is_file()
    if renames_done == 1:  # the store's consumequeue/ is in lost/, the rebuilt one not yet in place
        assert json.loads(run("info", store, "--config", conf, "--json").stdout)["unfinishedSwap"] is True
    out = run(reopen[0], store, "--config", conf, *reopen[1:])
    assert out.returncode == 0, out.stdout + out.stderr
    assert not (store / ".rebuild").exists()
    want = _files(golden_basic / "store", "consumequeue")
    got = _files(store, "consumequeue")
    if reopen[0] == "append":  # one entry more, after the rebuilt ones, in the queue the message went to
        changed = [k for k in got if got[k] != want.get(k)]
        assert len(changed) == 1 and got[changed[0]].rstrip(b"\0")[: len(want[changed[0]].rstrip(b"\0"))] == \
            want[changed[0]].rstrip(b"\0")
        for k in changed:
            got.pop(k), want.pop(k)
    assert got == want
    code, doc = _rebuild(store, conf)
    assert code == 0 and doc["changes"] is False
