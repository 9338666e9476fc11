"""The bulk index builder (for spark-load) against index files written key by key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rmqtool.engine.reader import open_reader
from rmqtool.ops.verify import VerifyReport, record_windows
from rmqtool.structures import index
from rmqtool.structures.commitlog import message, sysflag
from rmqtool.structures.index.build import build_files

ROOT = Path(__file__).resolve().parents[3]


def _keys(store: Path, conf: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, object]:
    reader = open_reader(store, conf)
    windows = list(record_windows(reader, VerifyReport(), {}))
    hashes = np.concatenate([w.key_hash for w in windows])
    offsets = np.concatenate([w.key_offset for w in windows])
    times = []
    for off in offsets.tolist():
        m = reader.read_record(off, verify_crc=False)
        assert isinstance(m, message.Message) and sysflag.transaction_type(m.sys_flag) != sysflag.TRANSACTION_ROLLBACK
        times.append(m.store_timestamp)
    return hashes, offsets, np.array(times, dtype=np.int64), reader


@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("which", ["fixture", "golden"])
def test_bulk_built_index_files_equal_the_key_by_key_ones(which, parts, golden_basic):
    store, conf = ((ROOT / "fixtures" / "store", ROOT / "fixtures" / "broker.conf") if which == "fixture"
                   else (golden_basic / "store", golden_basic / "broker.conf"))
    hashes, offsets, times, reader = _keys(store, conf)
    built = build_files(hashes, offsets, times, reader.config.maxHashSlotNum, reader.config.maxIndexNum, parts)
    written = [p.read_bytes() for p in reader.index_paths()]
    assert len(built) == len(written)
    for i, (a, b) in enumerate(zip(built, written, strict=True)):
        assert a == b, f"index file {i} differs; header {index.header_to_json(index.decode_header(a))}"
