"""A store with many small index files is written without holding every file open: only the newest
index file stays mapped, so a file-descriptor limit far below the number of index files is no limit."""

import json
import resource
import subprocess

from tests.cli_helpers import RMQTOOL

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
