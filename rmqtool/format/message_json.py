"""Messages as JSON objects (the decode schema, MessageExt names) read back into records.

`body` is base64 (or `bodyText`, UTF-8 text); hosts are `ip:port` / `[v6]:port` strings or
`{"address", "port"}` objects; `propertiesString`, when present, wins over `properties`.
A bad field raises ValueError naming it.
"""

from __future__ import annotations

import base64
import binascii

from rmqtool.errors import RmqError
from rmqtool.format import properties
from rmqtool.format.hosts import SocketAddress, parse_host
from rmqtool.format.message import Message

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def get_int(obj: dict, name: str, default: int = 0, bounds: tuple[int, int] = _INT32) -> int:
    value = obj.get(name, default)
    if value is None:
        return default
    if type(value) is not int:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"{name} {value} is out of range")
    return value


def get_long(obj: dict, name: str, default: int = 0) -> int:
    return get_int(obj, name, default, _INT64)


def get_str(obj: dict, name: str, default: str | None = None) -> str | None:
    value = obj.get(name, default)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {value!r}")
    return value


def get_body(obj: dict) -> bytes:
    if obj.get("body") is not None:
        text = get_str(obj, "body")
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("body is not valid base64 (use bodyText for plain text)") from None
    text = get_str(obj, "bodyText")
    return text.encode("utf-8") if text is not None else b""


def get_host(obj: dict, name: str, default: SocketAddress) -> SocketAddress:
    value = obj.get(name)
    if value is None:
        return default
    if isinstance(value, dict):
        value = f"[{value.get('address')}]:{value.get('port')}"
    if not isinstance(value, str):
        raise ValueError(f"{name} must be ip:port")
    try:
        return parse_host(value)
    except RmqError as e:
        raise ValueError(str(e)) from None


def get_properties(obj: dict) -> dict[str, str]:
    value = obj.get("properties") or {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError("properties must be an object of string values")
    return value


def stored_message(obj: dict, default_host: SocketAddress) -> Message:
    """The record `obj` describes, every stored field kept (import)."""
    if not isinstance(obj, dict):
        raise ValueError("a message must be a JSON object")
    topic = get_str(obj, "topic")
    if not topic:
        raise ValueError("topic is missing")
    props = get_str(obj, "propertiesString")
    if props is None:
        props = properties.build(get_properties(obj))
    return Message(
        topic=topic, body=get_body(obj), properties_string=props, queue_id=get_int(obj, "queueId"),
        flag=get_int(obj, "flag"), sys_flag=get_int(obj, "sysFlag"), born_timestamp=get_long(obj, "bornTimestamp"),
        born_host=get_host(obj, "bornHost", default_host), store_timestamp=get_long(obj, "storeTimestamp"),
        store_host=get_host(obj, "storeHost", default_host), reconsume_times=get_int(obj, "reconsumeTimes"),
        prepared_transaction_offset=get_long(obj, "preparedTransactionOffset"),
    )
