"""Scanner batches as Arrow record batches in the message schema, built column-wise.

Fixed fields come from the gathered header rows; topics and hosts are formatted once per
distinct value; msgIds are hex-encoded as one array; bodies and properties strings are copied
out of the segment by one compiled gather; properties are split into a map by one compiled
pass. Only records the column path cannot express (IPv6 hosts, properties that are not UTF-8)
go through the per-record codec.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqtool.io import textkernels
from rmqtool.io.buffers import binary_array, string_buffers, utf8_replaced
from rmqtool.io.schema import MESSAGE_SCHEMA
from rmqtool.report import COMMITLOG, WARNING, Finding
from rmqtool.structures.commitlog import compression, msgid, properties, sysflag
from rmqtool.structures.commitlog.crc import body_crc
from rmqtool.structures.commitlog.hosts import SocketAddress, host_len
from rmqtool.structures.commitlog.kernels import gathered
from rmqtool.structures.commitlog.scan import RecordBatch
from rmqtool.structures.consumequeue.dispatchkernel import dispatch_records

_HOST_V6_BITS = sysflag.BORN_HOST_V6 | sysflag.STORE_HOST_V6
_PAIR_END = ord(properties.PROPERTY_SEPARATOR)
_NAME_END = ord(properties.NAME_VALUE_SEPARATOR)
_FIXED = ("storeSize", "totalSize"), ("queueId", "queueId"), ("queueOffset", "queueOffset"), \
    ("sysFlag", "sysFlag"), ("flag", "flag"), ("bornTimestamp", "bornTimestamp"), \
    ("storeTimestamp", "storeTimestamp"), ("reconsumeTimes", "reconsumeTimes"), \
    ("preparedTransactionOffset", "preparedTransactionOffset"), ("bodyCRC", "bodyCRC")


def message_rows(batch: RecordBatch, delay_levels: np.ndarray) -> pa.RecordBatch:
    """The records of `batch` as rows of the message schema (`io.schema.MESSAGE_SCHEMA`)."""
    cols = batch.cols
    arr = np.frombuffer(batch.buf, dtype=np.uint8)
    v6 = np.flatnonzero((cols["sysFlag"] & _HOST_V6_BITS) != 0)
    per_record = {int(i): batch.message(int(i)) for i in v6.tolist()}
    store_host = _host_bytes(cols.raw, "store")
    offsets = batch.offsets
    dispatched = dispatch_records(arr, batch.geometry(), batch.base, delay_levels, keys=False)
    ids, names = batch.topics()
    body_data, body_off = gathered(arr, batch.body_pos, cols["bodyLength"])
    props_data, props_off = gathered(arr, batch.props_pos, batch.props_len)
    props_data, props_off = utf8_replaced(props_data, props_off)
    columns = {
        "msgId": _msg_ids(store_host, offsets, per_record),
        "commitLogOffset": pa.array(offsets, pa.int64()),
        "topic": pa.array(names, pa.string()).take(pa.array(ids)),
        "bornHost": _hosts(_host_bytes(cols.raw, "born"), per_record, "born_host"),
        "storeHost": _hosts(store_host, per_record, "store_host"),
        "body": binary_array(body_data, body_off),
        "propertiesString": binary_array(props_data, props_off, pa.large_string()),
        "properties": _properties_map(props_data, props_off),
        "tagsCode": pa.array(dispatched.tags_code, pa.int64(), mask=dispatched.in_cq == 0),
        "compression": _codecs(cols["sysFlag"]),
    }
    for name, source in _FIXED:
        columns[name] = pa.array(cols[source], MESSAGE_SCHEMA.field(name).type)
    return pa.RecordBatch.from_arrays([columns[f.name] for f in MESSAGE_SCHEMA], schema=MESSAGE_SCHEMA)


_CODEC_NAMES = pa.array([sysflag.COMPRESSION_NAMES.get(c, sysflag.UNKNOWN_COMPRESSION)
                         for c in range((sysflag.COMPRESSION_TYPE_MASK >> sysflag.COMPRESSION_TYPE_SHIFT) + 1)])


def _codecs(flags: np.ndarray) -> pa.Array:
    """The codec name of every compressed body (sysFlag COMPRESSED plus the codec bits), null for plain ones."""
    codes = (flags & sysflag.COMPRESSION_TYPE_MASK) >> sysflag.COMPRESSION_TYPE_SHIFT
    return _CODEC_NAMES.take(pa.array(codes.astype(np.int32), mask=(flags & sysflag.COMPRESSED) == 0))


def decompressed(rows: pa.RecordBatch, file: str) -> tuple[pa.RecordBatch, dict[int, Finding]]:
    """`rows` with every compressed body replaced by the body a consumer gets, and a warning finding
    (keyed by row) for each body that does not decompress (it keeps its stored bytes)."""
    codecs = rows.column("compression")
    if codecs.null_count == rows.num_rows:
        return rows, {}
    which = np.flatnonzero(codecs.is_valid().to_numpy(zero_copy_only=False))
    bodies, flags = rows.column("body"), rows.column("sysFlag").to_numpy()
    offsets, sizes = rows.column("commitLogOffset").to_numpy(), rows.column("storeSize").to_numpy()
    plain: list[bytes] = []
    failed: dict[int, Finding] = {}
    for i in which.tolist():
        result = compression.plain_body(bodies[i].as_py(), int(flags[i]))
        if result.body is None:
            failed[i] = Finding(file, int(offsets[i]), result.error, int(sizes[i]), WARNING, structure=COMMITLOG,
                                kind=compression.NOT_DECOMPRESSIBLE)
        plain.append(bodies[i].as_py() if result.body is None else result.body)
    mask = np.zeros(rows.num_rows, dtype=np.bool_)
    mask[which] = True
    body = pc.replace_with_mask(bodies, pa.array(mask), pa.array(plain, bodies.type))
    return rows.set_column(rows.schema.get_field_index("body"), "body", body), failed


def uncompressed(stored: pa.RecordBatch, plain: pa.RecordBatch, failed: dict[int, Finding]) -> pa.RecordBatch:
    """The records of `stored` whose bodies inflated (`plain`, from `decompressed`) as an uncompressing
    producer would have sent them: plain body, codec bits cleared, bodyCRC and storeSize to match."""
    codecs = stored.column("compression")
    done = codecs.is_valid().to_numpy(zero_copy_only=False).copy()
    done[list(failed)] = False
    which = np.flatnonzero(done)
    if not which.size:
        return stored
    new_data, new_off = string_buffers(plain.column("body"))
    _, old_off = string_buffers(stored.column("body"))
    flags = stored.column("sysFlag").to_numpy().copy()
    crcs = stored.column("bodyCRC").to_numpy().copy()
    sizes = stored.column("storeSize").to_numpy().copy()
    for i in which.tolist():
        crcs[i] = body_crc(bytes(new_data[new_off[i] : new_off[i + 1]]))
        flags[i] = sysflag.without_compression(int(flags[i]))
    sizes[which] += np.diff(new_off)[which] - np.diff(old_off)[which]
    out = plain
    for name, values in (("sysFlag", flags), ("bodyCRC", crcs), ("storeSize", sizes)):
        out = out.set_column(out.schema.get_field_index(name), name, pa.array(values, MESSAGE_SCHEMA.field(name).type))
    keep = np.ones(stored.num_rows, dtype=np.bool_)
    keep[which] = False
    codec = pc.if_else(pa.array(keep), codecs, pa.nulls(stored.num_rows, pa.string()))
    return out.set_column(out.schema.get_field_index("compression"), "compression", codec)


def _host_bytes(raw: np.ndarray, which: str) -> np.ndarray:
    """(n, 8) address + big-endian port bytes of the IPv4 born or store host of every row."""
    at = raw.dtype.fields[f"{which}Address"][1]  # the port follows the address
    rows = np.ascontiguousarray(raw).view(np.uint8).reshape(len(raw), raw.dtype.itemsize)
    return np.ascontiguousarray(rows[:, at : at + host_len(False)])


def _msg_ids(store_host: np.ndarray, offsets: np.ndarray, per_record: dict) -> pa.Array:
    text = msgid.create_many(store_host, offsets)
    ids = binary_array(text.ravel(), np.arange(len(offsets) + 1, dtype=np.int64) * text.shape[1],
                       pa.large_string()).cast(pa.string())
    return _patched(ids, {i: m.msg_id for i, m in per_record.items()})


def _hosts(host: np.ndarray, per_record: dict, attr: str) -> pa.Array:
    """`ip:port` of every row, each distinct host formatted once."""
    keys = host.view(">u8").ravel()
    if not len(keys):
        return pa.array([], pa.string())
    if (keys == keys[0]).all():
        distinct, which = keys[:1], np.zeros(len(keys), dtype=np.int64)
    else:
        distinct, which = np.unique(keys, return_inverse=True)
    texts = [str(SocketAddress(int(k).to_bytes(8, "big")[:4], _signed32(int(k) & 0xFFFFFFFF))) for k in
             distinct.tolist()]
    col = pa.array(texts, pa.string()).take(pa.array(which.ravel()))
    return _patched(col, {i: str(getattr(m, attr)) for i, m in per_record.items()})


def _signed32(v: int) -> int:
    return v - (1 << 32) if v >= 1 << 31 else v


def _patched(col: pa.Array, values: dict[int, str]) -> pa.Array:
    """`col` with the rows named in `values` replaced (records the column path cannot express)."""
    if not values:
        return col
    rows = col.to_pylist()
    for i, v in values.items():
        rows[i] = v
    return pa.array(rows, col.type)


def _properties_map(data: np.ndarray, offsets: np.ndarray) -> pa.Array:
    """Every pair of each properties string as a map (empty names and values kept, a repeated name
    keeps its first place and its last value)."""
    ks, kl, vs, vl, row_off = textkernels.split_pairs(data, offsets, _PAIR_END, _NAME_END)
    key_data, key_off = gathered(data, ks, kl)
    value_data, value_off = gathered(data, vs, vl)
    keys = binary_array(key_data, key_off, pa.large_string()).cast(pa.string())
    values = binary_array(value_data, value_off, pa.large_string()).cast(pa.string())
    return pa.MapArray.from_arrays(pa.array(row_off.astype(np.int32)), keys, values)
