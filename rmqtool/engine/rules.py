"""Every refusal the store makes of a message, written once.

The size rules take numpy arrays (a bulk load checks a chunk in one pass) or plain ints (a
single append is a batch of one) and yield `(mask, Refusal)` pairs: the mask says which
records the rule refuses. Topic names are checked once per distinct topic. The statuses
are the broker's: checkMessage refuses with MESSAGE_ILLEGAL, the encoder refuses properties
over 32767 bytes with PROPERTIES_SIZE_EXCEEDED. Integer fields take what their width on disk
holds (`INT_RANGES`), text must be UTF-8 (a Python string with a lone surrogate is not).
"""

from __future__ import annotations

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
_RECORD = message.HEADER_LAYOUTS[(False, False)]
_INT = _RECORD.bounds("queueId")  # Java's int: a DELAY property is parsed as one
# field (producer-row and export names) -> (least, greatest) value it may take
INT_RANGES: dict[str, tuple[int, int]] = {
    "queueId": (0, _INT[1]),
    "delayLevel": (0, _INT[1]),
    "commitLogOffset": (0, _RECORD.bounds("physicalOffset")[1]),
    **{name: _RECORD.bounds(name) for name in ("flag", "sysFlag", "reconsumeTimes", "bornTimestamp", "storeTimestamp",
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
