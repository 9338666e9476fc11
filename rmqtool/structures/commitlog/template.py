"""A hex-editor template of one commitlog record: every field with its byte range and value."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from rmqtool.structures.commitlog import message, sysflag
from rmqtool.structures.commitlog.crc import body_crc
from rmqtool.structures.commitlog.hosts import PORT_LEN, SocketAddress
from rmqtool.structures.commitlog.impossible import record_problem

_INT_CODES = {">i4": ">i", ">i8": ">q"}


@dataclass(frozen=True)
class FieldSpan:
    name: str
    start: int  # relative to the record start
    length: int
    value: object
    note: str = ""


def record_template(buf, pos: int, limit: int | None = None) -> tuple[list[FieldSpan], str | None]:
    """Fields of the record at buf[pos:], as far as the bytes allow, and the first problem met."""
    end = len(buf) if limit is None else limit
    spans: list[FieldSpan] = []
    p = pos

    def take(name: str, length: int, value_of, note: str = "") -> object:
        nonlocal p
        if p + length > end:
            raise _Stop(f"{name} runs past the end of the file")
        value = value_of(p)
        spans.append(FieldSpan(name, p - pos, length, value, note))
        p += length
        return value

    def int_field(name: str, code: str, note: str = "") -> int:
        size = struct.calcsize(code)
        return take(name, size, lambda at: struct.unpack_from(code, buf, at)[0], note)  # type: ignore[return-value]

    try:
        int_field("totalSize", ">i")
        magic = int_field("magicCode", ">i")
        if magic == message.BLANK_MAGIC:
            spans[-1] = FieldSpan("magicCode", 4, 4, magic, "BLANK: end of segment")
            return spans, None
        if magic not in (message.MAGIC_V1, message.MAGIC_V2):
            return spans, f"bad magic code 0x{magic & 0xFFFFFFFF:08X}"
        spans[-1] = FieldSpan("magicCode", 4, 4, magic, "v2" if magic == message.MAGIC_V2 else "v1")
        sys_flag = struct.unpack_from(">i", buf, pos + message.SYS_FLAG_OFFSET)[0] if pos + 40 <= end else 0
        for name, dtype in message.header_fields(sysflag.born_host_v6(sys_flag), sysflag.store_host_v6(sys_flag))[2:]:
            if name.endswith("Address"):
                width = int(dtype[1:])
                host = name.replace("Address", "Host")
                take(host, width + PORT_LEN, lambda at, w=width: str(SocketAddress(
                    bytes(buf[at : at + w]), struct.unpack_from(">i", buf, at + w)[0])))
            elif name.endswith("Port"):
                continue
            elif name == "sysFlag":
                int_field(name, ">i", ", ".join(sysflag.describe(sys_flag)))
            else:
                int_field(name, _INT_CODES[dtype])
        body_len = spans[-1].value
        crc_field = next(s for s in spans if s.name == "bodyCRC")
        body = take("body", max(int(body_len), 0), lambda at: bytes(buf[at : at + int(body_len)]))
        computed = body_crc(body)
        if computed != crc_field.value:
            spans[spans.index(crc_field)] = FieldSpan("bodyCRC", crc_field.start, 4, crc_field.value,
                                                      f"MISMATCH: body hashes to {computed}")
        if magic == message.MAGIC_V2:
            topic_len = int_field("topicLength", ">h")
        else:
            topic_len = int(take("topicLength", 1, lambda at: buf[at]))
        take("topic", topic_len, lambda at: bytes(buf[at : at + topic_len]).decode("utf-8", "replace"))
        props_len = int_field("propertiesLength", ">h")
        take("properties", max(props_len, 0), lambda at: bytes(buf[at : at + props_len]).decode("utf-8", "replace"))
    except _Stop as stop:
        return spans, str(stop)
    verdict = message.decode(buf, pos, limit)  # the codec judges: inspect and decode never disagree
    if isinstance(verdict, message.Corrupt):
        return spans, verdict.reason
    props = spans[-1]  # a whole record: its properties field is the last span
    found = record_problem(verdict, bytes(buf[pos + props.start : pos + props.start + props.length]))
    return spans, None if found is None else found[1]


class _Stop(Exception):
    pass
