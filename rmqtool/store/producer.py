"""Messages as a RocketMQ 4.9 producer hands them to the broker: properties built from tags,
keys, user properties, delay level and a fresh UNIQ_KEY in Java HashMap order, a body
compressed on request, and client batch bodies for putMessages. `append` and `append --batch`
build their input here."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rmqtool.errors import RmqError
from rmqtool.format import batch, compression, properties, sysflag, uniqkey
from rmqtool.format.hosts import SocketAddress, parse_host
from rmqtool.format.message import Message
from rmqtool.format.message_json import get_body, get_host, get_int, get_long, get_properties, get_str

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
                      born_ip: bytes = DEFAULT_BORN_HOST.address) -> str:
    """The properties string a producer sends: user properties plus the ones the client sets."""
    if delay_level < 0:
        raise RmqError(f"delay level {delay_level} is negative")
    pairs: dict[str, str] = {}
    if tags:
        pairs[properties.TAGS] = tags
    if keys:
        words = keys.split() if isinstance(keys, str) else list(keys)
        if words:
            pairs[properties.KEYS] = properties.KEY_SEPARATOR.join(words)
    for name, value in (user or {}).items():
        if not name or properties.NAME_VALUE_SEPARATOR in name or properties.PROPERTY_SEPARATOR in name \
                or properties.NAME_VALUE_SEPARATOR in value or properties.PROPERTY_SEPARATOR in value:
            raise RmqError(f"property {name!r} holds a separator character (\\x01 or \\x02) or an empty name")
        pairs[name] = value
    if delay_level > 0:
        pairs[properties.DELAY] = str(delay_level)
    if tx == sysflag.TRANSACTION_PREPARED:
        pairs[properties.TRAN_MSG] = TRANSACTION_PREPARED_VALUE
    if properties.UNIQ_KEY not in pairs:
        pairs[properties.UNIQ_KEY] = uniqkey.create(born_ip)
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


def message_from_json(obj: object, hosts: Hosts) -> Message:
    """An `append --batch` line: decode-schema names plus `bodyText`, `tags`, `keys`, `delayLevel`.

    Raises ValueError naming the bad field.
    """
    if not isinstance(obj, dict):
        raise ValueError("a message must be a JSON object")
    topic = get_str(obj, "topic")
    if not topic:
        raise ValueError("topic is missing")
    keys = obj.get("keys")
    if keys is not None and not isinstance(keys, str) and not (
            isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
        raise ValueError("keys must be a string or a list of strings")
    line_hosts = Hosts(get_host(obj, "bornHost", hosts.born), get_host(obj, "storeHost", hosts.store))
    try:
        return build_message(
            topic, get_body(obj), queue_id=get_int(obj, "queueId"), flag=get_int(obj, "flag"),
            tags=get_str(obj, "tags"), keys=keys, user=get_properties(obj), delay_level=get_int(obj, "delayLevel"),
            born_timestamp=get_long(obj, "bornTimestamp") if obj.get("bornTimestamp") is not None else None,
            hosts=line_hosts)
    except RmqError as e:
        raise ValueError(str(e)) from None


def client_batch(messages: Iterable[Message]) -> bytes:
    """The MessageBatch body carrying these messages' flags, bodies and properties."""
    return batch.encode([batch.BatchItem(m.flag, m.body, m.properties_string) for m in messages])
