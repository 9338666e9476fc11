"""One message into a store, as the broker's putMessage: `append` without --batch (the bulk loader is
load/, for imports and batches)."""

from __future__ import annotations

import os
import shutil

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.message_store import MessageStore
from rmqtool.engine.opening import open_store
from rmqtool.engine.results import PutResult
from rmqtool.engine.rollback import transaction
from rmqtool.structures.commitlog.message import Message


def put_one(root: str | os.PathLike, cfg: StoreConfig, msg: Message, *, flush: str | None, register_topics: bool,
            keep_store_host: bool) -> PutResult:
    """Put one message as the broker's putMessage (a store is made when missing), all or nothing: an
    interrupted put is rolled back, and a store made for it is removed again when it fails. The producer's
    refusals are the caller's (engine.commitlog.producer_refusal): the library also writes what a broker
    would refuse from a client. Unless `keep_store_host`, the message names the broker the store's
    records name."""
    opened = open_store(root, cfg)
    created = not opened.root.exists()
    try:
        with MessageStore(opened, flush=flush, register_topics=register_topics) as store:
            if not keep_store_host and store.store_host is not None:
                msg.store_host = store.store_host
            with transaction(store, "append"):
                return store.put_message(msg)
    except BaseException:
        if created:
            shutil.rmtree(opened.root, ignore_errors=True)
        raise
