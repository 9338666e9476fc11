"""A store with many small index files is written without holding every file open: only the newest
index file stays mapped, so a file-descriptor limit far below the number of index files is no limit."""

import json
import resource
import subprocess

from cli_helpers import RMQTOOL

FD_LIMIT = 128


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


def test_an_import_makes_more_index_files_than_the_descriptor_limit(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("mappedFileSizeCommitLog=1048576\nmaxHashSlotNum=64\nmaxIndexNum=256\n")
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"topic": "T", "queueId": i % 2, "bodyText": f"m{i}", "keys": f"k{i}"}) + "\n"
                            for i in range(12000)))
    store = tmp_path / "store"
    out = subprocess.run([str(RMQTOOL), "import", str(store), str(rows), "--config", str(conf), "--json"],
                         capture_output=True, text=True, preexec_fn=_limited)
    assert out.returncode == 0, out.stderr
    files = sorted((store / "index").iterdir())
    assert 2 * len(files) > FD_LIMIT  # 24000 keys at 255 entries a file; a mapped file holds two descriptors
    again = subprocess.run([str(RMQTOOL), "import", str(store), str(rows), "--config", str(conf), "--json"],
                           capture_output=True, text=True, preexec_fn=_limited)
    assert again.returncode == 0, again.stderr  # reopening the store maps only its newest index file
    verify = subprocess.run([str(RMQTOOL), "verify", str(store), "--config", str(conf), "--json"],
                            capture_output=True, text=True)
    doc = json.loads(verify.stdout)
    assert verify.returncode == 0 and doc["messages"] == 24000 and doc["indexEntries"] == 48000


def test_rolling_an_index_file_unmaps_the_previous_one_at_once(tmp_path):
    """The roll read the full file's header through a view of its map and then retired it: the map
    could not close, and each roll paid a full garbage collection (a 1 GiB store with 64-slot index
    files took minutes to load instead of seconds)."""
    import numpy as np

    from rmqtool.structures.index.service import IndexService

    service = IndexService(tmp_path / "index", 64, 256, clock=lambda: 1_700_000_000_000)
    n = 255
    service.put(np.arange(1, n + 1, dtype=np.int32), np.arange(n, dtype=np.int64) * 100,
                np.full(n, 1_700_000_000_000, dtype=np.int64))
    first = service.files[-1].mf
    service.put(np.array([7], dtype=np.int32), np.array([n * 100], dtype=np.int64),
                np.array([1_700_000_000_001], dtype=np.int64))
    assert len(service.files) == 2 and first.map.closed
    service.close()


def test_a_key_lookup_keeps_no_index_file_mapped():
    """A key lookup walks every index file newest first; keeping a map of each, a store with tens of
    thousands of 64-slot index files ran into the kernel's limit on maps (and took 0.76 s for 7103
    files where reading a header, a slot and a chain with pread takes 0.18 s)."""
    from cli_helpers import CONF, FIXTURE

    from rmqtool.engine.config import StoreConfig
    from rmqtool.engine.reader import StoreReader
    from rmqtool.ops.query import StoreQuery

    q = StoreQuery(StoreReader(FIXTURE, StoreConfig.from_file(CONF)[0]))
    hits = q.by_key("OrderTopic", "shared-1")
    assert len(hits) == 26 and {h.message.topic for h in hits} == {"OrderTopic"}
    with open("/proc/self/maps") as f:
        mapped = [line for line in f if "/index/" in line]
    assert mapped == []
    q.close()


def test_opening_a_store_stats_a_handful_of_its_index_files_not_every_one(tmp_path, monkeypatch):
    """Every query opens the store: checking the config against the index files stat'ed and sorted all
    of them as paths, 1.5 s of each lookup's 1.6 s on a store with 70 956 index files."""
    from pathlib import Path

    from rmqtool.engine.config import StoreConfig
    from rmqtool.engine.reader import StoreReader

    conf = tmp_path / "broker.conf"
    conf.write_text("mappedFileSizeCommitLog=1048576\nmaxHashSlotNum=64\nmaxIndexNum=256\n")
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"topic": "T", "bodyText": f"m{i}", "keys": f"k{i}"}) + "\n"
                            for i in range(1500)))
    store = tmp_path / "store"
    out = subprocess.run([str(RMQTOOL), "import", str(store), str(rows), "--config", str(conf)], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    assert len(list((store / "index").iterdir())) == 12  # 3000 keys at 255 a file
    stat = Path.stat
    seen: list[str] = []

    def counting(self, *args, **kwargs):
        if self.parent.name == "index":
            seen.append(self.name)
        return stat(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", counting)
    cfg = StoreConfig.from_file(conf)[0]
    StoreReader(store, cfg)
    assert 0 < len(seen) <= 8
