"""Moving messages in and out of a store: `append --batch` lines, `import` and `export`.

Input files are checked completely before the first byte is written: a bad line is an
error naming its line number and the store is left untouched. `import` writes records as
they were stored (storeTimestamp, hosts, flags, sysFlag, reconsume times and the exact
properties string kept; no delay rewrite), so exporting a store and importing it into an
empty one with the same settings reproduces the commitlog and consume queues byte for
byte and the index entry for entry.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.format import message, sysflag
from rmqtool.format.message_json import stored_message
from rmqtool.store.commitlog import check_message, delay_level
from rmqtool.store.config import StoreConfig
from rmqtool.store.message_store import MessageStore, check_topic
from rmqtool.store.producer import DEFAULT_STORE_HOST, Hosts, client_batch, message_from_json
from rmqtool.store.results import PutResult

Progress = Callable[[int], None]  # called with the number of messages just written


@dataclass
class WriteSummary:
    """What a bulk write did."""

    messages: int = 0
    batches: int = 0
    bytes: int = 0
    first_offset: int | None = None
    last_offset: int | None = None

    def add(self, result: PutResult) -> None:
        self.messages += result.msg_count
        self.bytes += result.wrote_bytes
        if self.first_offset is None:
            self.first_offset = result.wrote_offset
        self.last_offset = result.wrote_offset + result.wrote_bytes

    def to_json(self) -> dict:
        doc = {"messages": self.messages, "bytes": self.bytes, "firstOffset": self.first_offset,
               "endOffset": self.last_offset}
        if self.batches:
            doc["puts"] = self.batches
        return doc


def _lines(source: str | Path) -> Iterator[tuple[int, str]]:
    if str(source) == "-":
        yield from enumerate(sys.stdin, 1)
        return
    try:
        f = open(source, encoding="utf-8")  # noqa: SIM115 - closed by the with below
    except OSError as e:
        raise RmqError(f"cannot read {source}: {e.strerror}") from None
    with f:
        try:
            yield from enumerate(f, 1)
        except UnicodeDecodeError as e:
            raise RmqError(f"{source}: not UTF-8 text ({e.reason})") from None


def read_objects(source: str | Path) -> Iterator[tuple[int, object]]:
    """(line number, parsed object) of every non-blank line; a malformed line is an RmqError."""
    for n, line in _lines(source):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as e:
            raise RmqError(f"{source}:{n}: malformed JSON ({e.msg} at column {e.colno})") from None


def _checked(cfg: StoreConfig, source, n: int, msg: message.Message, as_stored: bool) -> message.Message:
    refusal = check_topic(msg.topic) or check_message(cfg, msg, as_stored=as_stored)
    if refusal is not None:
        raise RmqError(f"{source}:{n}: {refusal.status.value}: {refusal.reason}")
    return msg


def _batchable(msg: message.Message) -> bool:
    """The broker refuses transactional and delayed batches: such messages go in one by one."""
    return sysflag.transaction_type(msg.sys_flag) == sysflag.TRANSACTION_NOT and delay_level(msg.properties_string) <= 0


def read_append_file(source: str | Path, cfg: StoreConfig, hosts: Hosts | None = None) -> list[message.Message]:
    """Every line of a JSONL file (or `-`, stdin) as the message a producer would send, each
    checked against the store's rules: any bad line is an error naming it, before any write."""
    hosts = hosts or Hosts()
    messages = []
    for n, obj in read_objects(source):
        try:
            msg = message_from_json(obj, hosts)
        except ValueError as e:
            raise RmqError(f"{source}:{n}: {e}") from None
        messages.append(_checked(cfg, source, n, msg, as_stored=False))
    return messages


def append_messages(store: MessageStore, messages: list[message.Message], *, batch_size: int = 64,
                    progress: Progress | None = None) -> WriteSummary:
    """Append messages as a producer would send them.

    Messages with the same topic, queue and hosts go in as broker batches of at most
    `batch_size` (a batch carries its first message's bornTimestamp); each queue keeps the
    messages' order. Delayed and transactional messages go in one by one.
    """
    summary = WriteSummary()
    pending: dict[tuple, list[message.Message]] = {}

    def put_group(group: list[message.Message]) -> None:
        head = group[0]
        if len(group) == 1:
            result = store.put_message(head)
        else:
            result = store.put_batch(head.topic, head.queue_id, client_batch(group), born_timestamp=head.born_timestamp,
                                     born_host=head.born_host, store_host=head.store_host)
        if not result.ok:
            raise RmqError(f"{result.status.value}: {result.reason}")
        summary.batches += 1
        summary.add(result)
        if progress:
            progress(result.msg_count)

    for msg in messages:
        if not _batchable(msg):
            put_group([msg])
            continue
        key = (msg.topic, msg.queue_id, msg.born_host, msg.store_host)
        group = pending.setdefault(key, [])
        group.append(msg)
        if len(group) >= batch_size:
            put_group(pending.pop(key))
    for group in pending.values():
        put_group(group)
    return summary


@dataclass
class ImportPlan:
    messages: int
    columnar: bool  # the fast path takes the whole file
    rows: object | None = None  # LoadOptions when the file holds producer rows rather than an export


def check_import_file(source: str | Path, cfg: StoreConfig, rows=None) -> ImportPlan:
    """Check every record of an export, or every producer row (a file without propertiesString,
    loaded with `rows`, a LoadOptions), against the store's rules, before anything is written."""
    from rmqtool.store import bulk_import

    if str(source) == "-":
        raise RmqError("import reads a file (it is checked before anything is written), not stdin")
    if not Path(source).is_file():
        raise RmqError(f"cannot read {source}: no such file")
    from rmqtool.store import row_import

    if rows is not None and not row_import.is_export(Path(source)):
        return ImportPlan(row_import.check_rows(Path(source), rows), columnar=True, rows=rows)
    try:
        return ImportPlan(bulk_import.check(source, cfg), columnar=True)
    except bulk_import.Unsupported as e:
        if bulk_import.is_parquet(Path(source)):  # no line-by-line reading of Parquet
            raise RmqError(f"{source}: cannot import this Parquet file: {e}") from None
    count = 0
    for n, obj in read_objects(source):
        _checked(cfg, source, n, _stored(source, n, obj), as_stored=True)
        count += 1
    return ImportPlan(count, columnar=False)


def import_file(store: MessageStore, source: str | Path, plan: ImportPlan | None = None, *,
                progress: Progress | None = None) -> WriteSummary:
    """Write every message of an export (decode JSON schema, one per line, or Parquet) as it was stored.

    Check it first (`check_import_file`): a record refused here stops the import after the ones before it.
    """
    summary = WriteSummary()
    if plan is not None and plan.columnar:
        from rmqtool.store import bulk_import, row_import

        start = store.commitlog.max_offset
        if plan.rows is not None:
            summary.messages, summary.bytes = row_import.write_rows(store, Path(source), plan.rows, progress)
        else:
            summary.messages, summary.bytes = bulk_import.write(store, source, progress)
        summary.first_offset, summary.last_offset = start, store.commitlog.max_offset
        return summary
    for n, obj in read_objects(source):
        result = store.put_message(_stored(source, n, obj), as_stored=True)
        if not result.ok:
            raise RmqError(f"{source}:{n}: {result.status.value}: {result.reason}")
        summary.add(result)
        if progress:
            progress(1)
    return summary


def _stored(source, n: int, obj: object) -> message.Message:
    try:
        return stored_message(obj, DEFAULT_STORE_HOST)
    except ValueError as e:
        raise RmqError(f"{source}:{n}: {e}") from None
