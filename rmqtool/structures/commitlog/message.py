"""The commitlog record: layout, encoder and per-record decoder.

Layout (big-endian): totalSize, magic, bodyCRC, queueId, flag, queueOffset, physicalOffset,
sysFlag, bornTimestamp, bornHost, storeTimestamp, storeHost, reconsumeTimes,
preparedTransactionOffset, bodyLength + body, topicLength + topic, propertiesLength +
properties. Hosts are 8 bytes (IPv4) or 20 (IPv6) as sysFlag says; v2 records (5.x) carry a
2-byte topic length. `header_fields` is the single description both this module's struct
codec and the columnar scanner's numpy dtypes are built from.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple

from rmqtool.structures.commitlog import compression, msgid, properties, sysflag
from rmqtool.structures.commitlog.crc import body_crc
from rmqtool.structures.commitlog.hosts import IPV4_LEN, IPV6_LEN, SocketAddress
from rmqtool.structures.layout import Layout

if TYPE_CHECKING:
    import numpy as np

MAGIC_V1 = -626843481  # 0xDAA320A7
MAGIC_V2 = -626843477  # 0xDAA320AB, 5.x: 2-byte topic length
BLANK_MAGIC = -875286124  # 0xCBD43194, end-of-segment marker
MAX_TOPIC_LEN_V1 = 127
MAX_TOPIC_LEN_V2 = 32767
DEFAULT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024

PREFIX = struct.Struct(">ii")  # totalSize, magic: enough to classify a record
_I32, _I64 = struct.Struct(">i"), struct.Struct(">q")
BLANK_MARKER_LEN = PREFIX.size  # a record needs this much room left after it


def header_fields(born_v6: bool, store_v6: bool) -> list[tuple[str, str]]:
    """(name, numpy type) of every fixed field up to and including bodyLength."""
    return list(HEADER_LAYOUTS[(born_v6, store_v6)].fields)


def _header_layout(born_v6: bool, store_v6: bool) -> Layout:
    return Layout.of(
        ("totalSize", ">i4"),
        ("magicCode", ">i4"),
        ("bodyCRC", ">i4"),
        ("queueId", ">i4"),
        ("flag", ">i4"),
        ("queueOffset", ">i8"),
        ("physicalOffset", ">i8"),
        ("sysFlag", ">i4"),
        ("bornTimestamp", ">i8"),
        ("bornAddress", f"V{IPV6_LEN if born_v6 else IPV4_LEN}"),
        ("bornPort", ">i4"),
        ("storeTimestamp", ">i8"),
        ("storeAddress", f"V{IPV6_LEN if store_v6 else IPV4_LEN}"),
        ("storePort", ">i4"),
        ("reconsumeTimes", ">i4"),
        ("preparedTransactionOffset", ">i8"),
        ("bodyLength", ">i4"),
    )


# The fixed part of a record for each (bornHost IPv6, storeHost IPv6): the one place its offsets live.
HEADER_LAYOUTS = {(b, s): _header_layout(b, s) for b in (False, True) for s in (False, True)}
_V4 = HEADER_LAYOUTS[(False, False)]
TOTAL_SIZE_OFFSET = _V4.offset("totalSize")
MAGIC_OFFSET = _V4.offset("magicCode")
BODY_CRC_OFFSET = _V4.offset("bodyCRC")
QUEUE_ID_OFFSET = _V4.offset("queueId")
FLAG_OFFSET = _V4.offset("flag")
QUEUE_OFFSET_OFFSET = _V4.offset("queueOffset")
PHYSICAL_OFFSET_OFFSET = _V4.offset("physicalOffset")
SYS_FLAG_OFFSET = _V4.offset("sysFlag")
BORN_TIMESTAMP_OFFSET = _V4.offset("bornTimestamp")
STORE_TIMESTAMP_V4_OFFSET = _V4.offset("storeTimestamp")  # with an IPv4 born host
HOST_V6_EXTRA = IPV6_LEN - IPV4_LEN  # an IPv6 host moves every later field by this much
BODY_LENGTH_FROM_HEADER_END = _V4.width("bodyLength")  # bodyLength is the last fixed field
TOPIC_LEN_V1_LEN, TOPIC_LEN_V2_LEN = 1, 2  # the topic length field: 1 byte (v1) or 2 (v2)
PROPERTIES_LEN_LEN = 2

HEADER_STRUCTS = {key: layout.codec for key, layout in HEADER_LAYOUTS.items()}
HEADER_V4_LEN = _V4.size  # 88
MIN_RECORD_LEN = HEADER_V4_LEN + TOPIC_LEN_V1_LEN + PROPERTIES_LEN_LEN


def header_dtype(born_v6: bool, store_v6: bool) -> np.dtype:
    return HEADER_LAYOUTS[(born_v6, store_v6)].dtype()


def header_len(sys_flag: int) -> int:
    return HEADER_STRUCTS[(sysflag.born_host_v6(sys_flag), sysflag.store_host_v6(sys_flag))].size


def topic_len_size(magic: int) -> int:
    return TOPIC_LEN_V2_LEN if magic == MAGIC_V2 else TOPIC_LEN_V1_LEN


def record_len(sys_flag: int, body_len: int, topic_len: int, props_len: int, magic: int = MAGIC_V1) -> int:
    """totalSize of a record with these parts."""
    return header_len(sys_flag) + body_len + topic_len_size(magic) + topic_len + PROPERTIES_LEN_LEN + props_len


@dataclass
class Message:
    """One commitlog record, named as RocketMQ's MessageExt names its fields."""

    topic: str
    body: bytes = b""
    properties_string: str = ""
    queue_id: int = 0
    flag: int = 0
    queue_offset: int = 0
    physical_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: SocketAddress = field(default_factory=lambda: SocketAddress(bytes(4), 0))
    store_timestamp: int = 0
    store_host: SocketAddress = field(default_factory=lambda: SocketAddress(bytes(4), 0))
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    body_crc: int = 0
    store_size: int = 0
    magic: int = MAGIC_V1

    @property
    def msg_id(self) -> str:
        return msgid.create(self.store_host, self.physical_offset)

    @property
    def properties(self) -> dict[str, str]:
        return properties.parse(self.properties_string)

    def with_host_flags(self) -> Message:
        """A copy whose sysFlag host bits agree with the host address families."""
        return replace(self, sys_flag=sysflag.with_host_bits(self.sys_flag, self.born_host.is_v6,
                                                             self.store_host.is_v6))


@dataclass
class DecodedMessage:
    """A record with its consume-queue tagsCode (None when it is not in a consume queue)."""

    message: Message
    tags_code: int | None
    _plain: compression.Decompressed | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def codec(self) -> str | None:
        """The codec of a compressed body (zlib, lz4, zstd or unknown); None for a plain one."""
        return compression.codec_of(self.message.sys_flag)

    def plain(self) -> compression.Decompressed:
        """The body a consumer gets (decompressed once), or why it cannot be had."""
        if self._plain is None:
            self._plain = compression.plain_body(self.message.body, self.message.sys_flag)
        return self._plain

    def to_json(self, body: str = "base64") -> dict:
        return to_json(self.message, self.tags_code, body, self.plain() if body in DECOMPRESSED_FORMATS else None)


class Blank(NamedTuple):
    """The end-of-segment marker: the rest of the segment (`size` bytes) is unused."""

    size: int


class Corrupt(NamedTuple):
    """A record that cannot be trusted: why, and how many bytes its header claims."""

    reason: str
    length: int


def encoded_parts(msg: Message) -> tuple[bytes, bytes]:
    """(topic, properties) as stored bytes."""
    return msg.topic.encode("utf-8"), msg.properties_string.encode("utf-8")


def encoded_len(msg: Message) -> int:
    topic, props = encoded_parts(msg)
    return record_len(msg.sys_flag, len(msg.body), len(topic), len(props), msg.magic)


_RECORD_STRUCTS: dict[tuple[int, int, int, int, int], struct.Struct] = {}
_RECORD_STRUCTS_MAX = 1024  # one per distinct (layout, lengths); beyond this records are packed piecewise
_HOST_BITS = sysflag.BORN_HOST_V6 | sysflag.STORE_HOST_V6
_HOST_BITS_OF = {(IPV4_LEN, IPV4_LEN): 0, (IPV6_LEN, IPV4_LEN): sysflag.BORN_HOST_V6,
                 (IPV4_LEN, IPV6_LEN): sysflag.STORE_HOST_V6, (IPV6_LEN, IPV6_LEN): _HOST_BITS}


def _record_struct(host_bits: int, magic: int, body_len: int, topic_len: int, props_len: int) -> struct.Struct | None:
    """A Struct packing a whole record of these lengths in one call (cached)."""
    key = (host_bits, magic, body_len, topic_len, props_len)
    found = _RECORD_STRUCTS.get(key)
    if found is None and len(_RECORD_STRUCTS) < _RECORD_STRUCTS_MAX:
        head = HEADER_STRUCTS[(sysflag.born_host_v6(host_bits), sysflag.store_host_v6(host_bits))].format.lstrip(">")
        topic_len_code = "h" if magic == MAGIC_V2 else "B"
        found = _RECORD_STRUCTS[key] = struct.Struct(f">{head}{body_len}s{topic_len_code}{topic_len}sh{props_len}s")
    return found


def encode_into(buf, pos: int, msg: Message, parts: tuple[bytes, bytes] | None = None) -> int:
    """Write `msg` at `buf[pos:]` exactly as the broker stores it; returns totalSize.

    Every field is taken from `msg` as given (the store fills in offsets, timestamps and
    bodyCRC before calling this); only totalSize is computed. `parts` are the encoded
    (topic, properties) when the caller already has them.
    """
    topic, props = parts or encoded_parts(msg)
    flags = msg.sys_flag
    born, store = msg.born_host, msg.store_host
    host_bits = flags & _HOST_BITS
    if _HOST_BITS_OF.get((len(born.address), len(store.address))) != host_bits:
        raise ValueError("sysFlag host bits do not match the host address families")
    body, magic = msg.body, msg.magic
    body_len, topic_len, props_len = len(body), len(topic), len(props)
    whole = _RECORD_STRUCTS.get((host_bits, magic, body_len, topic_len, props_len)) or _record_struct(
        host_bits, magic, body_len, topic_len, props_len)
    if whole is not None:
        total = whole.size
        whole.pack_into(buf, pos, total, magic, msg.body_crc, msg.queue_id, msg.flag, msg.queue_offset,
                        msg.physical_offset, flags, msg.born_timestamp, born.address, born.port, msg.store_timestamp,
                        store.address, store.port, msg.reconsume_times, msg.prepared_transaction_offset, body_len,
                        body, topic_len, topic, props_len, props)
        return total
    head = HEADER_STRUCTS[(sysflag.born_host_v6(flags), sysflag.store_host_v6(flags))]
    total = head.size + body_len + topic_len_size(magic) + topic_len + 2 + props_len
    head.pack_into(buf, pos, total, magic, msg.body_crc, msg.queue_id, msg.flag, msg.queue_offset,
                   msg.physical_offset, flags, msg.born_timestamp, born.address, born.port, msg.store_timestamp,
                   store.address, store.port, msg.reconsume_times, msg.prepared_transaction_offset, body_len)
    p = pos + head.size
    buf[p : p + body_len] = body
    p += body_len
    if magic == MAGIC_V2:
        struct.pack_into(">h", buf, p, topic_len)
        p += 2
    else:
        buf[p] = topic_len
        p += 1
    buf[p : p + topic_len] = topic
    p += topic_len
    struct.pack_into(">h", buf, p, props_len)
    p += 2
    buf[p : p + props_len] = props
    return total


def batch_header_template(sys_flag: int, born_host: SocketAddress, store_host: SocketAddress,
                          reconsume_times: int) -> bytes:
    """The fixed fields shared by the records of one broker batch; sizes, CRCs, flag, queue id, offsets and
    both timestamps are zero (the batch kernel writes them per batch and record)."""
    head = HEADER_STRUCTS[(sysflag.born_host_v6(sys_flag), sysflag.store_host_v6(sys_flag))]
    return head.pack(0, MAGIC_V1, 0, 0, 0, 0, 0, sys_flag, 0, born_host.address, born_host.port, 0,
                     store_host.address, store_host.port, reconsume_times, 0, 0)


def encode(msg: Message) -> bytes:
    out = bytearray(encoded_len(msg))
    encode_into(out, 0, msg)
    return bytes(out)


def encode_blank(size: int) -> bytes:
    return PREFIX.pack(size, BLANK_MAGIC)


def write_blank(buf, pos: int, size: int) -> None:
    """Close a segment at `pos` with the end marker: the `size` bytes from `pos` on are unused."""
    buf[pos : pos + BLANK_MARKER_LEN] = encode_blank(size)


def fits(size, room):
    """The segment-fit rule: a record of `size` bytes fits the `room` left in its segment when it leaves
    room for an end marker after it (size + 8 <= room). Ints or arrays; `kernels.fits` is its compiled twin."""
    return size + BLANK_MARKER_LEN <= room


def usable(room):
    """How many of the `room` bytes left in a segment records may take: all but the end marker's (`fits`)."""
    return room - BLANK_MARKER_LEN


def reach(pos: int, size: int = 0) -> int:
    """Where the bytes of a record of `size` bytes at `pos` and of the end marker after it end; with no
    size, where a marker (or any record's totalSize and magic) at `pos` ends."""
    return pos + size + BLANK_MARKER_LEN


def unwritten(buf, pos: int) -> bool:
    """Nothing was written at `pos`: the totalSize and magic a record or marker would start with are zeros."""
    return not any(buf[pos : pos + BLANK_MARKER_LEN])


def declared_end(pos: int, total: int, room: int) -> int:
    """Where the record at `pos` whose totalSize field says `total` ends, when a record can be that long in
    the `room` left; otherwise where its totalSize and magic end."""
    return pos + total if MIN_RECORD_LEN <= total <= room else reach(pos)


def total_size(buf, pos: int) -> int:
    """The totalSize field of the record (or marker) at `pos`."""
    return PREFIX.unpack_from(buf, pos)[0]


def incomplete(buf, pos: int, written_end: int) -> bool:
    """The record (or end marker) at `pos` is still arriving: the bytes written up to `written_end`
    do not yet hold its totalSize and magic, or end before its totalSize says it ends (a replica
    receives records cut at any byte)."""
    if written_end - pos < BLANK_MARKER_LEN:
        return True
    return pos + total_size(buf, pos) > written_end


def store_timestamp_offset(sys_flag: int) -> int:
    """Where a record's storeTimestamp is, from its start: after the born host, which sysFlag says is IPv4
    or IPv6. `kernels.store_timestamp_at` is its compiled twin."""
    return STORE_TIMESTAMP_V4_OFFSET + (HOST_V6_EXTRA if sys_flag & sysflag.BORN_HOST_V6 else 0)


def store_timestamp_at(buf, pos: int) -> int:
    """The storeTimestamp of the record at `buf[pos:]`."""
    flags = _I32.unpack_from(buf, pos + SYS_FLAG_OFFSET)[0]
    return _I64.unpack_from(buf, pos + store_timestamp_offset(flags))[0]


def store_timestamps_at(buf, positions):
    """`store_timestamp_at` of the records at each of `positions` (an int64 array) of `buf`, in one
    gather; -1 where a record's header would run past the end of `buf`."""
    import numpy as np

    data = np.frombuffer(buf, dtype=np.uint8)
    out = np.full(len(positions), -1, dtype=np.int64)
    ok = (positions >= 0) & (positions + STORE_TIMESTAMP_V4_OFFSET + HOST_V6_EXTRA + 8 <= len(data))
    if ok.any():
        at = positions[ok]
        flags = _gather(data, at + SYS_FLAG_OFFSET, ">i4")
        out[ok] = _gather(data, at + STORE_TIMESTAMP_V4_OFFSET + np.where(flags & sysflag.BORN_HOST_V6, HOST_V6_EXTRA,
                                                                           0), ">i8")
    return out


def _gather(data, at, dtype: str):
    """The big-endian integers of `dtype` that start at each position `at` of the byte array `data`."""
    import numpy as np

    width = np.dtype(dtype).itemsize
    return data[at[:, None] + np.arange(width)].view(dtype).ravel().astype(np.int64)


def decode(buf, pos: int = 0, limit: int | None = None, *, verify_crc: bool = True,
           expected_offset: int | None = None) -> Message | Blank | Corrupt:
    """Decode the record at `buf[pos:]` (bounded by `limit`); never raises on bad bytes.

    `expected_offset` is the record's real commitlog position: a physicalOffset field that
    disagrees with it is corruption (a record copied or written at the wrong place).
    """
    end = len(buf) if limit is None else limit
    room = end - pos
    if room < PREFIX.size:
        return Corrupt("truncated record header", room)
    total, magic = PREFIX.unpack_from(buf, pos)
    if magic == BLANK_MAGIC:
        return Blank(total)
    if magic not in (MAGIC_V1, MAGIC_V2):
        return Corrupt(f"bad magic code 0x{magic & 0xFFFFFFFF:08X}", room)
    if total < MIN_RECORD_LEN or total > room:
        return Corrupt(f"bad totalSize {total} ({room} bytes left)", room)
    sys_flag = struct.unpack_from(">i", buf, pos + SYS_FLAG_OFFSET)[0]
    head = HEADER_STRUCTS[(sysflag.born_host_v6(sys_flag), sysflag.store_host_v6(sys_flag))]
    if head.size > total:
        return Corrupt("totalSize smaller than the fixed fields", total)
    (_, _, crc, queue_id, flag, queue_offset, physical_offset, _, born_ts, born_addr, born_port, store_ts,
     store_addr, store_port, reconsume, prepared, body_len) = head.unpack_from(buf, pos)
    rec_end = pos + total
    p = pos + head.size
    if body_len < 0 or p + body_len > rec_end:
        return Corrupt(f"bad bodyLength {body_len}", total)
    body = bytes(buf[p : p + body_len])
    p += body_len
    tl_size = topic_len_size(magic)
    if p + tl_size > rec_end:
        return Corrupt("record ends inside the topic length", total)
    topic_len = buf[p] if tl_size == 1 else struct.unpack_from(">h", buf, p)[0]
    p += tl_size
    if topic_len < 0 or p + topic_len + 2 > rec_end:
        return Corrupt(f"bad topic length {topic_len}", total)
    topic = bytes(buf[p : p + topic_len]).decode("utf-8", "replace")
    p += topic_len
    props_len = struct.unpack_from(">h", buf, p)[0]
    p += 2
    if props_len < 0 or p + props_len != rec_end:
        return Corrupt(f"record length mismatch: totalSize {total}, fields add up to {p + props_len - pos}", total)
    props = bytes(buf[p : p + props_len]).decode("utf-8", "replace")
    if verify_crc and body_crc(body) != crc:
        return Corrupt(f"body CRC mismatch: stored {crc}, computed {body_crc(body)}", total)
    if expected_offset is not None and physical_offset != expected_offset:
        return Corrupt(f"physicalOffset field {physical_offset} != position {expected_offset}", total)
    return Message(
        topic=topic, body=body, properties_string=props, queue_id=queue_id, flag=flag,
        queue_offset=queue_offset, physical_offset=physical_offset, sys_flag=sys_flag,
        born_timestamp=born_ts, born_host=SocketAddress(born_addr, born_port), store_timestamp=store_ts,
        store_host=SocketAddress(store_addr, store_port), reconsume_times=reconsume,
        prepared_transaction_offset=prepared, body_crc=crc, store_size=total, magic=magic,
    )


def to_json(msg: Message, tags_code: int | None = None, body: str = "base64",
            plain: compression.Decompressed | None = None) -> dict:
    """The decode JSON schema (MessageExt names).

    `body` picks base64, text or hex of the body a consumer gets (decompressed), stored (base64
    of the bytes in the record) or none. A body that does not decompress is shown from its stored
    bytes (the readers report it as a warning finding). `plain` is the decompressed body when the
    caller has it.
    """
    shown = msg.body
    if body in DECOMPRESSED_FORMATS and sysflag.is_compressed(msg.sys_flag):
        plain = plain or compression.plain_body(msg.body, msg.sys_flag)
        if plain.body is not None:
            shown = plain.body
    return {
        "msgId": msg.msg_id,
        "commitLogOffset": msg.physical_offset,
        "storeSize": msg.store_size,
        "topic": msg.topic,
        "queueId": msg.queue_id,
        "queueOffset": msg.queue_offset,
        "sysFlag": msg.sys_flag,
        "flag": msg.flag,
        "bornTimestamp": msg.born_timestamp,
        "storeTimestamp": msg.store_timestamp,
        "bornHost": str(msg.born_host),
        "storeHost": str(msg.store_host),
        "reconsumeTimes": msg.reconsume_times,
        "preparedTransactionOffset": msg.prepared_transaction_offset,
        "bodyCRC": msg.body_crc,
        "body": render_body(shown, body),
        "propertiesString": msg.properties_string,
        "properties": msg.properties,
        "tagsCode": tags_code,
        "compression": compression.codec_of(msg.sys_flag),
    }


BODY_FORMATS = ("base64", "text", "hex", "none", "stored")
DECOMPRESSED_FORMATS = ("base64", "text", "hex")  # the others show the stored bytes (or nothing)


def render_body(body: bytes, how: str) -> str | None:
    """`body` as base64 (also for `stored`), UTF-8 text, hex, or None for `none`."""
    if how in ("base64", "stored"):
        return base64.b64encode(body).decode("ascii")
    if how == "text":
        return body.decode("utf-8", "replace")
    if how == "hex":
        return body.hex()
    return None


def last_record_before(buf, end: int, reach: int) -> Message | None:
    """The record that ends exactly at `end` (where an end-of-segment marker or the data stops), found by
    looking back at most `reach` bytes for a start whose totalSize reaches `end` and whose fields all add up
    (the nearest such start wins; a body that happens to hold such numbers is checked as a whole record
    too). None when there is no such record: the segment's newest record without walking it."""
    import numpy as np

    lo = max(0, end - reach)
    arr = np.frombuffer(buf, dtype=np.uint8)[lo:end]
    if len(arr) < MIN_RECORD_LEN:
        return None
    n = len(arr) - MIN_RECORD_LEN + 1  # starts where a whole record still fits before `end`
    size = (arr[:n].astype(np.int64) << 24 | arr[1 : n + 1].astype(np.int64) << 16
            | arr[2 : n + 2].astype(np.int64) << 8 | arr[3 : n + 3].astype(np.int64))  # a big-endian totalSize
    for at in np.flatnonzero(size == len(arr) - np.arange(n))[::-1].tolist():  # decode checks magic and fields
        found = decode(buf, lo + at, end, verify_crc=False)
        if isinstance(found, Message) and found.store_size == end - lo - at:
            return found
    return None


def newest_of_full_segment(buf, data_end: int, reach: int) -> Message | None:
    """The newest record of a segment closed by its end marker, whose data (the marker included) ends at
    `data_end` (`last_record_before` the marker); None when no marker closes it there."""
    marker = data_end - BLANK_MARKER_LEN
    if marker < 0 or not isinstance(decode(buf, marker, data_end, verify_crc=False), Blank):
        return None
    return last_record_before(buf, marker, reach)
