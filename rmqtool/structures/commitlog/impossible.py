"""Records no broker writes, though their sizes add up and their body CRC matches (in 4.9 the CRC covers the
body only): the scan's rules for the header fields and properties the CRC leaves unchecked.

- `NEGATIVE_QUEUE_ID`: a queueId below 0. Queues are numbered from 0 (a delayed record's is its level - 1).
- `IMPOSSIBLE_QUEUE_OFFSET`: a queueOffset below 0, or above `most_queue_offset` of the record's commitlog offset:
  the queueOffset records before it in its queue were each written before it in the log, each at least
  `MIN_RECORD_LEN` bytes long. (A 5.x inner-batch record holds many queue offsets: only the sign rule holds it.)
- `TORN_PROPERTIES`: a properties field holding NUL bytes, which producers' name/value text does not hold: a write
  torn across them (the bytes that did not arrive read as zeros), so the string no longer reads as its pairs.

These are the scan policy's (decode, verify, salvage, export): such a record is damage, reported at its offset
over its totalSize, and the scan goes on after it. The broker's recovery (checkMessageAndReturnSize) takes them
all, and so does the `broker` walk. Each rule takes one record's ints or a batch's numpy columns; `nul_bytes` is
compiled in `kernels` from this same function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqtool.structures.commitlog.message import MIN_RECORD_LEN
from rmqtool.structures.commitlog.sysflag import INNER_BATCH

if TYPE_CHECKING:
    from rmqtool.structures.commitlog.message import Message

NEGATIVE_QUEUE_ID = "negative-queue-id"
IMPOSSIBLE_QUEUE_OFFSET = "impossible-queue-offset"
TORN_PROPERTIES = "torn-properties"
KINDS = (NEGATIVE_QUEUE_ID, IMPOSSIBLE_QUEUE_OFFSET, TORN_PROPERTIES)  # in the order the rules are asked


def most_queue_offset(physical_offset):
    """The greatest queueOffset a record at `physical_offset` can have: each record before it in its queue
    takes at least `MIN_RECORD_LEN` bytes of the log before it. An int or an array."""
    return physical_offset // MIN_RECORD_LEN


def negative_queue_id(queue_id):
    return queue_id < 0


def impossible_queue_offset(queue_offset, physical_offset, sys_flag):
    return (queue_offset < 0) | ((queue_offset > most_queue_offset(physical_offset)) & ((sys_flag & INNER_BATCH) == 0))


def torn_properties(nul_count):
    return nul_count > 0


def nul_bytes(buf, starts, lengths, first, count):
    """For each string buf[s:s+len] (a record's properties field): where its first NUL byte is, from the string's
    start (-1: none), into `first`, and how many it holds into `count`. A loop `kernels.nul_bytes` compiles: one
    branch-free pass over each field (a vector loop), the bytes looked at one by one only where it found a NUL."""
    for r in range(starts.shape[0]):
        field = buf[starts[r] : starts[r] + lengths[r]]
        nul = False
        for byte in field:
            nul |= byte == 0
        first[r] = -1
        count[r] = 0
        if nul:
            for k in range(field.shape[0]):
                if field[k] == 0:
                    if first[r] < 0:
                        first[r] = k
                    count[r] += 1


def judge(queue_id, queue_offset, physical_offset, sys_flag, props_at, props_len, nul_first, nul_count
          ) -> list[tuple[int, str, str]]:
    """(index, kind, reason) of each record (numpy columns, one row a record) that breaks a rule, in row order:
    its first rule broken names the kind, the reason names every one. `props_at` is the commitlog offset of each
    record's properties field, `nul_first` and `nul_count` what `nul_bytes` found in it."""
    import numpy as np

    broken = (negative_queue_id(queue_id), impossible_queue_offset(queue_offset, physical_offset, sys_flag),
              torn_properties(nul_count))
    out = []
    for i in np.flatnonzero(broken[0] | broken[1] | broken[2]).tolist():
        reasons = []
        if broken[0][i]:
            reasons.append(f"queueId {int(queue_id[i])} is negative: no broker writes it")
        if broken[1][i]:
            reasons.append(_queue_offset_reason(int(queue_offset[i]), int(physical_offset[i])))
        if broken[2][i]:
            first, length = int(nul_first[i]), int(props_len[i])
            reasons.append(f"properties torn: NUL bytes at {int(props_at[i]) + first} (byte {first} of {length}, "
                           f"{int(nul_count[i])} in all): no producer writes them, and the body CRC does not cover "
                           "the properties")
        kind = next(k for k, b in zip(KINDS, broken, strict=True) if b[i])
        out.append((i, kind, "; ".join(reasons)))
    return out


def _queue_offset_reason(queue_offset: int, physical_offset: int) -> str:
    if queue_offset < 0:
        return f"queueOffset {queue_offset} is negative: no broker writes it"
    return (f"queueOffset {queue_offset} is impossible at commitlog offset {physical_offset}: the {queue_offset} "
            f"records before it in its queue take at least {queue_offset} x {MIN_RECORD_LEN} bytes before it "
            f"(at most queueOffset {most_queue_offset(physical_offset)} there)")


def record_problem(msg: Message, props: bytes) -> tuple[str, str] | None:
    """(kind, reason) when the record `msg`, whose properties field holds the bytes `props`, breaks a rule, else
    None: `judge` for one record (`inspect`'s verdict)."""
    import numpy as np

    first, count = np.empty(1, dtype=np.int64), np.empty(1, dtype=np.int64)
    nul_bytes(np.frombuffer(props, dtype=np.uint8), np.zeros(1, dtype=np.int64), np.array([len(props)]), first, count)
    values = (msg.queue_id, msg.queue_offset, msg.physical_offset, msg.sys_flag,
              msg.physical_offset + msg.store_size - len(props), len(props))
    found = judge(*(np.array([v], dtype=np.int64) for v in values), first, count)
    return (found[0][1], found[0][2]) if found else None
