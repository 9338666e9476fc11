"""Messages as a RocketMQ 4.9 producer hands them to the broker: properties built from tags,
keys, user properties, delay level and a fresh UNIQ_KEY in Java HashMap order, a body
compressed on request, and client batch bodies for putMessages. `append` builds its message
here, and bulk loads build the properties of rows with their own pairs here."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rmqtool.engine.rules import bad_property, out_of_range, range_reason, reserved_property_reason
from rmqtool.errors import RmqError
from rmqtool.structures.commitlog import batch, compression, properties, sysflag, uniqkey
from rmqtool.structures.commitlog.hosts import SocketAddress, parse_host
from rmqtool.structures.commitlog.message import Message

DEFAULT_STORE_HOST = parse_host("127.0.0.1:10911")
DEFAULT_BORN_HOST = parse_host("127.0.0.1:0")
TRANSACTIONS = {
    "not": sysflag.TRANSACTION_NOT,
    "prepared": sysflag.TRANSACTION_PREPARED,
    "commit": sysflag.TRANSACTION_COMMIT,
    "rollback": sysflag.TRANSACTION_ROLLBACK,
}
TRANSACTION_PREPARED_VALUE = "true"


@dataclass
class Hosts:
    born: SocketAddress = DEFAULT_BORN_HOST
    store: SocketAddress = DEFAULT_STORE_HOST


def transaction_flag(word: str | None) -> int:
    if word is None:
        return sysflag.TRANSACTION_NOT
    flag = TRANSACTIONS.get(word.lower())
    if flag is None:
        raise RmqError(f"unknown transaction {word!r}: use prepared, commit or rollback")
    return flag


def client_properties(*, tags: str | None = None, keys: str | Iterable[str] | None = None,
                      user: Mapping[str, str] | None = None, delay_level: int = 0, tx: int = sysflag.TRANSACTION_NOT,
                      born_ip: bytes = DEFAULT_BORN_HOST.address, uniq: str | None = None) -> str:
    """The properties string a producer sends: user properties plus the ones the client sets
    (a fresh UNIQ_KEY from `born_ip`, or `uniq`, unless the user gives one)."""
    if delay_level < 0:  # said in words: the range check below would give the bounds
        raise RmqError(f"delay level {delay_level} is negative")
    if out_of_range("delayLevel", delay_level):
        raise RmqError(f"delay level {range_reason('delayLevel', delay_level)}")
    pairs: dict[str, str] = {}
    if tags:
        pairs[properties.TAGS] = tags
    if keys:
        words = keys.split() if isinstance(keys, str) else list(keys)
        if words:
            pairs[properties.KEYS] = properties.KEY_SEPARATOR.join(words)
    for name, value in (user or {}).items():
        reserved = reserved_property_reason(name)
        if reserved is not None:
            raise RmqError(reserved)
        if bad_property(name, value):
            raise RmqError(f"property {name!r} holds a separator character (\\x01 or \\x02) or an empty name")
        pairs[name] = value
    if delay_level > 0:
        pairs[properties.DELAY] = str(delay_level)
    if tx == sysflag.TRANSACTION_PREPARED:
        pairs[properties.TRAN_MSG] = TRANSACTION_PREPARED_VALUE
    if properties.UNIQ_KEY not in pairs:
        pairs[properties.UNIQ_KEY] = uniq or uniqkey.create(born_ip)
    return properties.build((k, pairs[k]) for k in properties.java_hashmap_order(pairs))


def build_message(topic: str, body: bytes, *, queue_id: int = 0, flag: int = 0, tags: str | None = None,
                  keys: str | Iterable[str] | None = None, user: Mapping[str, str] | None = None,
                  delay_level: int = 0, transaction: str | None = None, born_timestamp: int | None = None,
                  hosts: Hosts | None = None, compress: str | None = None) -> Message:
    """The message a producer sends; `compress` (zlib, lz4, zstd) compresses the body as the client
    does, setting COMPRESSED and the codec bits in sysFlag."""
    hosts = hosts or Hosts()
    tx = transaction_flag(transaction)
    props = client_properties(tags=tags, keys=keys, user=user, delay_level=delay_level, tx=tx,
                              born_ip=hosts.born.address)
    flags = tx
    if compress is not None:
        body, bits = compression.compress(body, compress)
        flags |= bits
    return Message(topic=topic, body=body, properties_string=props, queue_id=queue_id, flag=flag, sys_flag=flags,
                   born_timestamp=time.time_ns() // 1_000_000 if born_timestamp is None else born_timestamp,
                   born_host=hosts.born, store_host=hosts.store)


def client_batch(messages: Iterable[Message]) -> bytes:
    """The MessageBatch body carrying these messages' flags, bodies and properties."""
    return batch.encode([batch.BatchItem(m.flag, m.body, m.properties_string) for m in messages])
