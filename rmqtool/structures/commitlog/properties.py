"""The message properties string: `name \\x01 value \\x02` repeated.

Strings built by the broker have no trailing separator; client strings keep whatever the
client wrote. Two readings exist: every pair as stored (empty names and values included),
and Java's (`string2messageProperties`), which drops pairs shorter than `a\\x01b`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rmqtool.structures.javahash import java_string_hash

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"
MAX_PROPERTIES_LEN = 32767

KEYS = "KEYS"
TAGS = "TAGS"
UNIQ_KEY = "UNIQ_KEY"
DELAY = "DELAY"
REAL_TOPIC = "REAL_TOPIC"
REAL_QID = "REAL_QID"
TRAN_MSG = "TRAN_MSG"
WAIT = "WAIT"
CRC32 = "__CRC32#"
KEY_SEPARATOR = " "

_HASHMAP_INITIAL_CAPACITY = 16
_HASHMAP_LOAD_FACTOR = 0.75


def too_long(size):
    """Properties of `size` bytes (or Java chars) that a record cannot hold: its length field is a signed
    short. An int or an array."""
    return size > MAX_PROPERTIES_LEN


def too_long_reason(unit: str) -> str:
    """Why properties `too_long` in `unit` (bytes or characters) are refused."""
    return f"over {MAX_PROPERTIES_LEN} {unit}"


def parse(text: str) -> dict[str, str]:
    """Every pair of a stored properties string, empty names and values included."""
    out: dict[str, str] = {}
    for pair in text.split(PROPERTY_SEPARATOR):
        if pair:
            name, _, value = pair.partition(NAME_VALUE_SEPARATOR)
            out[name] = value
    return out


def parse_java(text: str) -> dict[str, str]:
    """The pairs Java's parser keeps: a non-empty name and a non-empty value."""
    out: dict[str, str] = {}
    for pair in text.split(PROPERTY_SEPARATOR):
        name, sep, value = pair.partition(NAME_VALUE_SEPARATOR)
        if sep and name and value:
            out[name] = value
    return out


def build(pairs: Mapping[str, str] | Iterable[tuple[str, str]]) -> str:
    """A properties string in the given order, without a trailing separator (as the broker writes)."""
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    return PROPERTY_SEPARATOR.join(f"{k}{NAME_VALUE_SEPARATOR}{v}" for k, v in items)


def java_hashmap_order(keys: Iterable[str], initial_capacity: int = _HASHMAP_INITIAL_CAPACITY) -> list[str]:
    """`keys` (in insertion order) in the order a java.util.HashMap iterates them."""
    ordered = list(dict.fromkeys(keys))
    capacity = initial_capacity
    while len(ordered) > capacity * _HASHMAP_LOAD_FACTOR:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(ordered, key=bucket)  # sorted() is stable: insertion order inside a bucket


def keys_of(properties: Mapping[str, str]) -> list[str]:
    """The words of the KEYS property (the index keys besides UNIQ_KEY)."""
    return [k for k in properties.get(KEYS, "").split(KEY_SEPARATOR) if k]


def java_rebuild(text: str, updates: Iterable[tuple[str, str]] = ()) -> str:
    """The string the broker writes after reading `text` into a HashMap and putting `updates`.

    Java's reading drops empty names and values, a put on an existing name keeps its place,
    and the pairs come out in HashMap iteration order without a trailing separator.
    """
    pairs = parse_java(text)
    for name, value in updates:
        pairs[name] = value
    return build((k, pairs[k]) for k in java_hashmap_order(pairs))
