"""Message rows as JSON lines, written column-wise by compiled loops.

The lines are exactly what `json.dumps(row, ensure_ascii=False, separators=(",", ":"))` of the
per-record decoder's object gives (`format.message.to_json`), without a Python object per row:
every string column is escaped as a whole, integers are formatted in the line loop.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from rmqtool.io import textkernels
from rmqtool.io.buffers import string_buffers, utf8_replaced
from rmqtool.io.schema import MESSAGE_SCHEMA

BODY_FORMATS = ("base64", "text", "hex", "none", "stored")
_INT_KINDS = (pa.int32(), pa.int64())
_INT, _TEXT = 1, 2


def _quoted(col: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    data, offsets = string_buffers(col)
    valid = np.ones(len(col), dtype=np.bool_) if not col.null_count else col.is_valid().to_numpy(
        zero_copy_only=False)
    return textkernels.json_strings(data, offsets, valid)


def _body(col: pa.Array, how: str) -> tuple[np.ndarray, np.ndarray]:
    data, offsets = string_buffers(col)
    if how in ("base64", "stored"):
        return textkernels.base64_strings(data, offsets)
    if how == "hex":
        return textkernels.hex_strings(data, offsets)
    if how == "text":
        data, offsets = utf8_replaced(data, offsets)
        return textkernels.json_strings(data, offsets, np.ones(len(col), dtype=np.bool_))
    return textkernels.json_strings(data, offsets, np.zeros(len(col), dtype=np.bool_))  # none: null


def _object(col: pa.MapArray) -> tuple[np.ndarray, np.ndarray]:
    row_off = np.asarray(col.offsets, dtype=np.int64)
    keys, key_off = string_buffers(col.keys)
    values, value_off = string_buffers(col.items)
    # a sliced map keeps its children whole: its offsets index them as they are
    return textkernels.json_objects(keys, key_off, values, value_off, row_off)


def jsonl_bytes(rows: pa.RecordBatch, body: str = "base64") -> memoryview:
    """One JSON line per row of a message-schema batch (bytes-like, not copied); `body` renders the
    body column."""
    literals: list[bytes] = []
    plan: list[tuple[int, int]] = []
    ints: list[np.ndarray] = []
    nulls: list[np.ndarray] = []
    texts: list[tuple[np.ndarray, np.ndarray]] = []
    for k, field in enumerate(MESSAGE_SCHEMA):
        literals.append(("{" if k == 0 else ",").encode() + json.dumps(field.name).encode() + b":")
        plan.append((0, len(literals) - 1))
        col = rows.column(field.name)
        if field.type in _INT_KINDS:
            ints.append(col.to_numpy(zero_copy_only=False).astype(np.int64) if not col.null_count else
                        col.fill_null(0).to_numpy().astype(np.int64))
            nulls.append(col.is_null().to_numpy(zero_copy_only=False) if col.null_count else
                         np.zeros(len(col), dtype=np.bool_))
            plan.append((_INT, len(ints) - 1))
            continue
        if field.name == "body":
            texts.append(_body(col, body))
        elif field.name == "properties":
            texts.append(_object(col))
        else:
            texts.append(_quoted(col))
        plan.append((_TEXT, len(texts) - 1))
    literals.append(b"}")
    plan.append((0, len(literals) - 1))
    lit_off = np.cumsum([0] + [len(x) for x in literals]).astype(np.int64)
    out = textkernels.assemble_lines(
        np.array(plan, dtype=np.int64), np.frombuffer(b"".join(literals), dtype=np.uint8), lit_off,
        tuple(ints), tuple(nulls), tuple(d for d, _ in texts), tuple(off for _, off in texts), rows.num_rows)
    return memoryview(out)
