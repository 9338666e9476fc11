"""Messages as table rows: the columns every message table shows, from decoded batches or from
message JSON objects, streamed through `grid`."""

from __future__ import annotations

import base64

from rmqtool.cli import output
from rmqtool.cli.grid import Column
from rmqtool.structures.commitlog.message import render_body

MESSAGE_COLUMNS = (  # `keep`: on a narrow terminal the lowest goes first; msgId (what `query --msg-id` takes) stays
    Column("phyOffset", 10, right=True, keep=10),  # as wide as the store's largest offset
    Column("size", 5, right=True, keep=3),
    Column("topic", 16, least=8, keep=8),
    Column("queue", 5, right=True, keep=5),
    Column("queueOffset", 11, right=True, keep=6),
    Column("storeTimestamp", 24, keep=7, crowds=True),  # at 80 columns the topic shrinks for it
    Column("msgId", 32, keep=9),
    Column("sysFlag", 16, least=7, keep=0),
    Column("tags", 10, least=4, keep=2),
    Column("keys", 12, least=4, keep=1),
    Column("body", 40, least=10, keep=4),
)
BODY_PREVIEW = 64  # bytes of a body shown in a table


def message_table(items, body: str, offset_digits: int = 10, follow: bool = False) -> bool:
    """Messages (message-schema batches, or lists of message JSON objects) as a streaming table, with a
    line for each finding where it occurs; whether any finding was an error. `follow`: rows that come
    one by one, written to stdout (never a pager) as they come."""
    import sys
    from contextlib import nullcontext

    from rmqtool.cli.grid import paged, write_table
    from rmqtool.report import ERROR, Finding

    columns = [Column("phyOffset", max(offset_digits, 9), right=True, keep=10), *MESSAGE_COLUMNS[1:]]
    corrupt = 0

    def rows():
        nonlocal corrupt
        for item in items:
            if isinstance(item, Finding):
                corrupt += item.severity == ERROR
                yield output.printable(f"{item.severity}: {item.file} at {item.offset}: {item.reason}")
            else:
                yield message_columns(item, body) if hasattr(item, "column") else json_columns(item, body)

    with nullcontext(sys.stdout) if follow else paged() as out:
        shown = write_table(out, columns, rows(), flush=follow)
    regions = f", [red]{output.count(corrupt, 'corrupt region')}[/]" if corrupt else ""
    output.stderr.print(output.count(shown, "message") + regions)
    return bool(corrupt)


def message_columns(batch, body: str) -> list[list]:
    """The cell texts of a message-schema batch, one list per column of MESSAGE_COLUMNS; its bodies as `log_rows`
    gives them for `body` (`log_rows.bodies_for`: decompressed unless stored bytes are asked for)."""
    import pyarrow.compute as pc

    from rmqtool.structures.commitlog import sysflag

    col = batch.column
    props = col("properties")
    flags = {f: " ".join(sysflag.describe(f)) for f in pc.unique(col("sysFlag")).to_pylist()}
    previews = pc.binary_slice(col("body"), 0, BODY_PREVIEW).to_pylist()
    lengths = pc.binary_length(col("body")).to_pylist()
    return [
        col("commitLogOffset").to_pylist(), col("storeSize").to_pylist(), col("topic").to_pylist(),
        col("queueId").to_pylist(), col("queueOffset").to_pylist(),
        output.iso_times(col("storeTimestamp").to_numpy()),
        col("msgId").to_pylist(), [flags[f] for f in col("sysFlag").to_pylist()],
        [t or "" for t in pc.map_lookup(props, "TAGS", "first").to_pylist()],
        [k or "" for k in pc.map_lookup(props, "KEYS", "first").to_pylist()],
        [_preview(b, body, n <= BODY_PREVIEW) for b, n in zip(previews, lengths, strict=True)],
    ]


def json_columns(messages: list[dict], body: str) -> list[list]:
    """The cell texts of message JSON objects (`to_json("base64")`), one list per column."""
    from rmqtool.structures.commitlog import sysflag

    raw = [base64.b64decode(m["body"] or "") for m in messages]
    return [
        [m["commitLogOffset"] for m in messages], [m["storeSize"] for m in messages],
        [m["topic"] for m in messages], [m["queueId"] for m in messages], [m["queueOffset"] for m in messages],
        output.iso_times(m["storeTimestamp"] for m in messages), [m["msgId"] for m in messages],
        [" ".join(sysflag.describe(m["sysFlag"])) for m in messages],
        [m["properties"].get("TAGS", "") for m in messages], [m["properties"].get("KEYS", "") for m in messages],
        [_preview(b[:BODY_PREVIEW], body, len(b) <= BODY_PREVIEW) for b in raw],
    ]


def _preview(body: bytes, how: str, whole: bool) -> str:
    """A table cell for the first bytes of a body (`whole`: all of it): text (bytes that are not UTF-8 as
    \\xNN), or as asked."""
    if how == "none":
        return ""
    if how == "text":
        return output.printable_bytes(body, whole)
    return render_body(body, how) or ""
