"""Arrow binary/string arrays as numpy (bytes, offsets) pairs and back, without copying rows one by one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rmqtool.io.textkernels import utf8_valid


def string_buffers(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, n + 1 int64 offsets) of a string or binary array (nulls read as empty)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        arr = arr.fill_null(b"" if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type) else "")
    small = pa.types.is_binary(arr.type) or pa.types.is_string(arr.type)  # 32-bit offsets: widened, data kept
    if not small:
        arr = arr.cast(pa.large_binary())
    _, offsets, data = arr.buffers()
    offs = np.frombuffer(offsets, dtype=np.int32 if small else np.int64)[arr.offset : arr.offset + len(arr) + 1]
    if small:
        offs = offs.astype(np.int64)
    buf = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
    return buf, offs


def binary_array(data: np.ndarray, offsets: np.ndarray, kind: pa.DataType | None = None) -> pa.Array:
    """A large binary (or `kind`, a large string type) array over `data` cut at `offsets` (no copy)."""
    kind = kind or pa.large_binary()
    return pa.Array.from_buffers(kind, len(offsets) - 1, [None, pa.py_buffer(offsets.astype(np.int64, copy=False)),
                                                          pa.py_buffer(data)])


def utf8_replaced(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows as valid UTF-8: rows that are not are decoded with U+FFFD replacements, as Python's
    `bytes.decode("utf-8", "replace")` shows them; valid input is returned as it is."""
    ok = utf8_valid(data, offsets)
    if ok.all():
        return data, offsets
    rows = [bytes(data[offsets[i] : offsets[i + 1]]) for i in range(len(ok))]
    for i in np.flatnonzero(~ok).tolist():
        rows[i] = rows[i].decode("utf-8", "replace").encode("utf-8")
    return string_buffers(pa.array(rows, pa.large_binary()))
