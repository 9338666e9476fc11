"""The one row schema of exported messages: the decode JSON schema (MessageExt names) as Arrow types.

`body` holds the stored bytes (binary); JSON renders it as base64 (or text/hex); `properties` is
every pair of `propertiesString`; `tagsCode` is null for records outside the consume queues;
`compression` names the body's codec (null when the body is not compressed).
"""

from __future__ import annotations

import pyarrow as pa

from rmqtool.engine.rules import out_of_range, range_reason

INT32_FIELDS = ("storeSize", "queueId", "sysFlag", "flag", "reconsumeTimes", "bodyCRC")
INT64_FIELDS = ("commitLogOffset", "queueOffset", "bornTimestamp", "storeTimestamp", "preparedTransactionOffset",
                "tagsCode")

MESSAGE_SCHEMA = pa.schema([
    ("msgId", pa.string()), ("commitLogOffset", pa.int64()), ("storeSize", pa.int32()), ("topic", pa.string()),
    ("queueId", pa.int32()), ("queueOffset", pa.int64()), ("sysFlag", pa.int32()), ("flag", pa.int32()),
    ("bornTimestamp", pa.int64()), ("storeTimestamp", pa.int64()), ("bornHost", pa.string()),
    ("storeHost", pa.string()), ("reconsumeTimes", pa.int32()), ("preparedTransactionOffset", pa.int64()),
    ("bodyCRC", pa.int32()), ("body", pa.large_binary()), ("propertiesString", pa.large_string()),
    ("properties", pa.map_(pa.string(), pa.string())), ("tagsCode", pa.int64()), ("compression", pa.string()),
])
FIELD_NAMES = tuple(MESSAGE_SCHEMA.names)

# The input side: the fields a load reads, with the type a JSON or CSV reader gives each (None: let
# the reader infer it; keys may be a string or a list, properties an object).
PRODUCER_TYPES: dict[str, pa.DataType | None] = {
    "topic": pa.string(), "queueId": pa.int64(), "body": pa.string(), "bodyText": pa.string(), "tags": pa.string(),
    "keys": None, "properties": None, "bornTimestamp": pa.int64(), "bornHost": pa.string(),
    "storeHost": pa.string(), "flag": pa.int64(), "delayLevel": pa.int64(), "reconsumeTimes": pa.int64(),
}
# what import reads of an export: every field a record is made of, integers as int64 and text as
# text (a JSON export's body is base64 text; a Parquet export's stays binary)
STORED_TYPES: dict[str, pa.DataType | None] = {
    f.name: pa.int64() if pa.types.is_integer(f.type) else pa.string() for f in MESSAGE_SCHEMA
    if f.name in ("commitLogOffset", "queueId", "flag", "sysFlag", "reconsumeTimes", "bornTimestamp",
                  "storeTimestamp", "preparedTransactionOffset", "topic", "body", "propertiesString", "bornHost",
                  "storeHost")}
STORED_ONLY = ("propertiesString", "storeTimestamp")  # fields an export has and producer rows do not

# What a field of an input row must be (docs/json-schema.md, "Input lines"): null or absent is
# "not given"; otherwise exactly the JSON type below, never converted from another.
INT_MUST, TEXT_MUST = "must be an integer", "must be a string"
KEYS_MUST = "must be a string or a list of strings"
PROPERTIES_MUST = "must be an object of string values"
NULL_PROPERTY = "a value is null (give a string, or leave the pair out)"
_MUST = {"keys": KEYS_MUST, "properties": PROPERTIES_MUST}


def must(name: str, kind: pa.DataType | None) -> str:
    """Why a value of another type is refused for field `name` of type `kind`."""
    return _MUST.get(name) or (INT_MUST if kind is not None and pa.types.is_integer(kind) else TEXT_MUST)


def misfit(name: str, value, kind: pa.DataType | None) -> str | None:
    """Why the JSON value `value` (as Python's json gives it) cannot be field `name`, or None."""
    if value is None:
        return None
    if name == "keys":
        good = isinstance(value, str) or (isinstance(value, list) and all(isinstance(w, str) for w in value))
    elif name == "properties":
        if isinstance(value, dict) and any(v is None for v in value.values()):
            return NULL_PROPERTY
        good = isinstance(value, str) or (isinstance(value, dict) and all(isinstance(v, str) for v in value.values()))
    elif kind is not None and pa.types.is_integer(kind):
        if not isinstance(value, int) or isinstance(value, bool):
            return must(name, kind)
        return range_reason(name) if out_of_range(name, value) else None  # every integer field has its range
    else:
        good = isinstance(value, str)
    return None if good else must(name, kind)
