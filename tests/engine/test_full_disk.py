"""A store write that meets a full disk: refused in one line naming what did not fit, a new store is
not left behind as a skeleton, and an existing store is rolled back to what it held."""

from __future__ import annotations

import hashlib
from pathlib import Path

from cli_helpers import run

CONF = "mappedFileSizeCommitLog=65536\nmappedFileSizeConsumeQueue=4000\nmaxHashSlotNum=64\nmaxIndexNum=256\n"


def _rows(path: Path, n: int) -> Path:
    path.write_text("".join(f'{{"topic": "T", "bodyText": "{"x" * 2000}", "keys": "k{i}"}}\n' for i in range(n)))
    return path


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "lock"}


def test_an_import_into_a_new_store_that_does_not_fit_leaves_no_skeleton(small_disk, tmp_path):
    store = small_disk / "store"
    done = run("import", store, _rows(tmp_path / "rows.jsonl", 10))  # 1 GiB segments: not one fits
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "free space" in done.stderr, done.stderr
    assert not store.exists()


def test_an_import_that_fills_the_disk_is_rolled_back(small_disk, tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text(CONF)
    store = small_disk / "store"
    first = run("import", store, _rows(tmp_path / "few.jsonl", 5), "--config", conf)
    assert first.returncode == 0, first.stderr
    before = _digest(store)
    done = run("import", store, _rows(tmp_path / "many.jsonl", 2000), "--config", conf)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert _digest(store) == before
    assert not (store / "abort").exists()
