"""Every refusal the store makes of a message, written once.

The size rules take numpy arrays (a bulk load checks a chunk in one pass) or plain ints (a
single append is a batch of one) and yield `(mask, Refusal)` pairs: the mask says which
records the rule refuses. Topic names are checked once per distinct topic. The statuses
are the broker's: checkMessage refuses with MESSAGE_ILLEGAL, the encoder refuses properties
over 32767 bytes with PROPERTIES_SIZE_EXCEEDED. Integer fields take what their width on disk
holds (`INT_RANGES`), text must be UTF-8 (a Python string with a lone surrogate is not).
A producer's message (append, producer rows) also meets the broker's send rules: a topic of
`SENT_TOPIC_CHARS` only, no user property of a name the client reserves (`RESERVED_PROPERTIES`).
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from dataclasses import dataclass

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.results import PutResult, PutStatus, refused
from rmqtool.structures.commitlog import message, properties

ENCODER_HEADROOM = 64 * 1024  # the broker's encoder allows maxMessageSize of body plus 64 KiB of the rest
_BAD_TOPIC_CHARS = ("/", "\\", "\0")
SEPARATORS = (properties.NAME_VALUE_SEPARATOR, properties.PROPERTY_SEPARATOR)
_OVER_CHARS, _OVER_BYTES = properties.too_long_reason("characters"), properties.too_long_reason("bytes")
NOT_UTF8 = "not UTF-8 text"
# the topic characters a broker takes from a producer (TopicValidator: ^[%|a-zA-Z0-9_-]+$)
SENT_TOPIC_CHARS = frozenset(string.ascii_letters + string.digits + "%|-_")
SENT_TOPIC_RULE = "a topic is letters, digits, %, |, - and _ (the broker's ^[%|a-zA-Z0-9_-]+$)"
# MessageConst.STRING_HASH_SET (4.9.7): names the client sets itself, refused by Message.putUserProperty. UNIQ_KEY
# is left out: a row may bring its own message id (the client sets one only where none is given).
RESERVED_PROPERTIES = frozenset({
    "TRACE_ON", "MSG_REGION", properties.KEYS, properties.TAGS, properties.WAIT, properties.DELAY, "RETRY_TOPIC",
    properties.REAL_TOPIC, properties.REAL_QID, properties.TRAN_MSG, "PGROUP", "MIN_OFFSET", "MAX_OFFSET",
    "BUYER_ID", "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG", "CORRECTION_FLAG", "MQ2_FLAG", "RECONSUME_TIME",
    "MAX_RECONSUME_TIMES", "CONSUME_START_TIME", "INSTANCE_ID", "CORRELATION_ID", "REPLY_TO_CLIENT", "TTL",
    "ARRIVE_TIME", "PUSH_REPLY_TIME", "CLUSTER", "MSG_TYPE", "INNER_MULTI_QUEUE_OFFSET",
})
_OWN_FIELDS = {properties.KEYS: "--keys (in a row: its keys field)", properties.TAGS: "--tags (in a row: its tags "
               "field)", properties.DELAY: "--delay-level (in a row: its delayLevel field)",
               properties.TRAN_MSG: "append --transaction prepared"}
_RECORD = message.HEADER_LAYOUTS[(False, False)]
_INT = _RECORD.bounds("queueId")  # Java's int: a DELAY property is parsed as one
# field (producer-row and export names) -> (least, greatest) value it may take
INT_RANGES: dict[str, tuple[int, int]] = {
    "queueId": (0, _INT[1]),
    "delayLevel": (0, _INT[1]),
    "reconsumeTimes": (0, _INT[1]),  # a count: the broker only ever raises it from 0
    "commitLogOffset": (0, _RECORD.bounds("physicalOffset")[1]),
    **{name: _RECORD.bounds(name) for name in ("flag", "sysFlag", "bornTimestamp", "storeTimestamp",
                                               "preparedTransactionOffset")},
}
_MESSAGE_INTS = {"queueId": "queue_id", "flag": "flag", "sysFlag": "sys_flag", "bornTimestamp": "born_timestamp",
                 "storeTimestamp": "store_timestamp", "reconsumeTimes": "reconsume_times",
                 "preparedTransactionOffset": "prepared_transaction_offset"}


@dataclass(frozen=True)
class Refusal:
    status: PutStatus
    field: str
    reason: str

    def result(self) -> PutResult:
        return refused(self.status, f"{self.field}: {self.reason}")


def range_reason(field: str, value: int | None = None) -> str:
    """Why a value of integer `field` is refused (`value`: the one given)."""
    low, high = INT_RANGES[field]
    return f"{'' if value is None else f'{value} '}out of range [{low}, {high}]"


def out_of_range(field: str, values):
    """Which of `values` (an array or an int) integer `field` cannot hold."""
    low, high = INT_RANGES[field]
    return (values < low) | (values > high)


def is_utf8(text: str) -> bool:
    """Whether `text` can be written as UTF-8 (no lone surrogate, as a command line's bytes that were
    not UTF-8 decode to)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def fields_refusal(msg: message.Message) -> Refusal | None:
    """A message whose properties are not UTF-8 or whose integers do not fit their width on disk."""
    if not is_utf8(msg.properties_string):
        return Refusal(PutStatus.MESSAGE_ILLEGAL, "properties", NOT_UTF8)
    for field, attr in _MESSAGE_INTS.items():
        value = getattr(msg, attr)
        if out_of_range(field, value):
            return Refusal(PutStatus.MESSAGE_ILLEGAL, field, range_reason(field, value))
    return None


def topic_refusal(topic: str) -> Refusal | None:
    """A topic the store cannot take: not UTF-8, not a folder name, or longer than a 4.9 record holds."""
    if not is_utf8(topic):
        return Refusal(PutStatus.MESSAGE_ILLEGAL, "topic", NOT_UTF8)
    if not topic or topic in (".", "..") or any(c in topic for c in _BAD_TOPIC_CHARS):
        return Refusal(PutStatus.MESSAGE_ILLEGAL, "topic", f"{topic!r} cannot name a consume-queue folder")
    size = len(topic.encode("utf-8"))
    if size > message.MAX_TOPIC_LEN_V1:
        return Refusal(PutStatus.MESSAGE_ILLEGAL, "topic", f"{size} bytes; at most {message.MAX_TOPIC_LEN_V1}")
    return None


def sent_topic_refusal(topic: str) -> Refusal | None:
    """A topic the broker refuses a producer's message for (TopicValidator.validateTopic, as the Java client's
    Validators.checkTopic): the store's rule, then only `SENT_TOPIC_CHARS`. Topics the broker writes itself
    (SCHEDULE_TOPIC_XXXX, RMQ_SYS_TRANS_HALF_TOPIC, %RETRY%group, %DLQ%group) pass; an export's records,
    stored already, are held to the store's rule (`topic_refusal`) only."""
    bad = topic_refusal(topic)
    if bad is not None:
        return bad
    odd = next((c for c in topic if c not in SENT_TOPIC_CHARS), None)
    if odd is not None:
        return Refusal(PutStatus.MESSAGE_ILLEGAL, "topic", f"{topic!r} holds {odd!r}: {SENT_TOPIC_RULE}")
    return None


def reserved_property_reason(name: str) -> str | None:
    """Why a producer may not set property `name` (Message.putUserProperty refuses the names of
    MessageConst.STRING_HASH_SET), naming the option or field that sets it; None: it may."""
    if name not in RESERVED_PROPERTIES:
        return None
    own = _OWN_FIELDS.get(name)
    return (f"property {name!r} is a system property the broker's client refuses as a user property"
            + (f": set it with {own}" if own else ""))


def size_refusals(cfg: StoreConfig, body_len, props_len, length, props_chars=None) -> Iterator[tuple[object, Refusal]]:
    """(mask, refusal) of every size rule; the arguments are arrays or ints alike. `props_chars`
    (the properties' Java String.length) is known to a single append only."""
    if props_chars is not None:
        yield properties.too_long(props_chars), Refusal(
            PutStatus.MESSAGE_ILLEGAL, "properties", _OVER_CHARS)
    yield properties.too_long(props_len), Refusal(
        PutStatus.PROPERTIES_SIZE_EXCEEDED, "properties", _OVER_BYTES)
    yield body_len > cfg.maxMessageSize, Refusal(
        PutStatus.MESSAGE_ILLEGAL, "body", f"over maxMessageSize ({cfg.maxMessageSize} bytes)")
    yield length > cfg.maxMessageSize + ENCODER_HEADROOM, Refusal(
        PutStatus.MESSAGE_ILLEGAL, "body", "record over maxMessageSize + 64 KiB")
    yield length > message.usable(cfg.mappedFileSizeCommitLog), Refusal(
        PutStatus.MESSAGE_ILLEGAL, "body", f"record does not fit a commitlog segment of {cfg.mappedFileSizeCommitLog}")


def size_refusal(cfg: StoreConfig, props: str, body_len: int, props_len: int, length: int) -> Refusal | None:
    """The first size rule one record breaks, or None."""
    chars = props_len
    if properties.too_long(props_len) and not props.isascii():
        chars = len(props.encode("utf-16-le")) // 2
    return next((r for mask, r in size_refusals(cfg, body_len, props_len, length, chars) if mask), None)


def bad_property(name: str, value: str) -> bool:
    """A user property a producer cannot send: an empty name, or a separator in name or value."""
    return not name or any(s in name or s in value for s in SEPARATORS)
