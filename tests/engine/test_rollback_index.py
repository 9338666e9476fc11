"""A rolled-back write leaves no index file behind: one made on disk and cut off before the index service listed
it (a signal between the two) stayed, with begin/endPhyOffset past the log's end (issue: 2 of 22 SIGTERMs)."""

from __future__ import annotations

import pytest
from cli_helpers import CONF, fixture_copy, tree_digest

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.message_store import MessageStore
from rmqtool.engine.rollback import transaction
from rmqtool.errors import Interrupted
from rmqtool.structures import index
from rmqtool.structures.index.file import IndexFile


def test_an_index_file_made_but_not_yet_listed_when_the_write_stops_is_removed_by_the_roll_back(tmp_path):
    store = fixture_copy(tmp_path)
    cfg = StoreConfig.from_file(CONF)[0]
    with MessageStore(store, cfg) as ms:
        ms.close()
    before = tree_digest(store)
    with MessageStore(store, cfg) as ms:
        svc = ms.index
        newest = svc.files[-1]
        with pytest.raises(Interrupted), transaction(ms, "append"):
            made = IndexFile.create(svc.directory / index.file_name(99_999_999_999_999), svc.hash_slots,
                                    svc.index_num, 3854848, 1_700_000_009_000)  # the roll's file, never listed
            made.mf.close()
            assert made.path.exists()
            raise KeyboardInterrupt
        assert [f.path.name for f in svc.files][-1] == newest.path.name
    assert not made.path.exists()
    assert tree_digest(store) == before
