"""`rmqtool append`, `rmqtool import`, `rmqtool export`: writing messages in, reading them out."""

from __future__ import annotations

from pathlib import Path

import click
import typer

from rmqtool.cli import output, selecting
from rmqtool.cli.times import TIME_HELP, TIME_UNIT
from rmqtool.errors import EXIT_PROBLEM, RmqError

CONFIG = typer.Option(None, "--config", help="broker.conf with the store's settings (segment sizes, index, delays).",
                      show_default=False)
FLUSH = typer.Option(None, "--flush", help="sync: acknowledge after fdatasync; async: page cache, flushed at close "
                     "(default: flushDiskType of the config, else async).", show_default=False,
                     click_type=click.Choice(["sync", "async"]))

STORE_TIMESTAMP = typer.Option(None, "--store-timestamp", help="Producer rows: the storeTimestamp of every "
                               f"message ({TIME_HELP}; default: now).", show_default=False)
QUEUES = typer.Option(4, "--queues", min=1, help="Producer rows without queueId: spread round-robin per topic over "
                      "this many queues.")
QUEUE_BY = typer.Option(None, "--queue-by", help="Producer rows without queueId: pick the queue by the Java hash of "
                        "this column instead.", show_default=False)


REGISTER = typer.Option(True, "--register-topics/--no-register-topics", help="Merge the topics written into "
                        "config/topics.json (the broker's topic table), so a broker started on the store serves them.")


PREALLOCATE = typer.Option(False, "--preallocate", help="Allocate every new segment, queue and index file whole "
                           "(broker.conf warmMapedFileEnable): more disk at once, and a full disk is refused when a "
                           "file is made rather than met by a later write. Default: sparse files, as the broker's.")


def load_options(cfg, store_timestamp: str | None, queues: int, queue_by: str | None, store_host: str | None = None,
                 time_unit: str | None = None):
    from rmqtool.cli.times import epoch_ms, unit_needs_a_time
    from rmqtool.engine.commitlog import now_ms
    from rmqtool.load.records import LoadOptions
    from rmqtool.structures.commitlog.hosts import parse_host

    unit_needs_a_time(time_unit, store_timestamp=store_timestamp)
    store_timestamp = epoch_ms(store_timestamp, "--store-timestamp", time_unit)
    return LoadOptions(cfg, now_ms() if store_timestamp is None else store_timestamp, queues, queue_by,
                       parse_host(store_host) if store_host else None)


def _config(path: Path | None, preallocate: bool = False):
    from rmqtool.engine.config import StoreConfig

    cfg = StoreConfig.from_file(path)[0] if path else StoreConfig()
    cfg.warmMapedFileEnable = cfg.warmMapedFileEnable or preallocate
    return cfg


def _hosts(born_host: str | None, store_host: str | None):
    from rmqtool.engine.producer import Hosts
    from rmqtool.structures.commitlog.hosts import parse_host

    hosts = Hosts()
    if born_host:
        hosts.born = parse_host(born_host)
    if store_host:
        hosts.store = parse_host(store_host)
    return hosts


def _properties(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise RmqError(f"--property {pair!r}: expected NAME=VALUE")
        out[name] = value
    return out


def _body(text: str | None, file: Path | None) -> bytes:
    if text is not None and file is not None:
        raise RmqError("give --body or --body-file, not both")
    if text is None and file is None:
        raise RmqError("give the message's body: --body TEXT or --body-file FILE (--body '' for an empty one)")
    if file is not None:
        try:
            return file.read_bytes()
        except OSError as e:
            raise RmqError(f"cannot read {file}: {e.strerror}") from None
    try:
        return (text or "").encode("utf-8")
    except UnicodeEncodeError:
        raise RmqError("--body: not UTF-8 text (use --body-file for bytes)") from None


def append(
    store: Path = typer.Argument(..., help="Store root (created when missing).", show_default=False),
    topic: str | None = typer.Option(None, "--topic", help="Topic of the message.", show_default=False),
    queue: int = typer.Option(0, "--queue", min=0, help="Queue id."),
    body: str | None = typer.Option(None, "--body", help="Body as UTF-8 text.", show_default=False),
    body_file: Path | None = typer.Option(None, "--body-file", help="Body read from this file, as bytes.",
                                          show_default=False),
    tags: str | None = typer.Option(None, "--tags", help="TAGS property (the consume queue's tagsCode).",
                                    show_default=False),
    keys: str | None = typer.Option(None, "--keys", help="Space-separated KEYS (indexed).", show_default=False),
    prop: list[str] = typer.Option([], "--property", help="User property NAME=VALUE (repeatable)."),
    compress: str | None = typer.Option(None, "--compress", help="Compress the body with this codec as a "
                                        "producer does (sysFlag COMPRESSED plus the codec bits), whatever its size.",
                                        show_default=False, click_type=click.Choice(["zlib", "lz4", "zstd"])),
    delay_level: int = typer.Option(0, "--delay-level", help="Delay level (1..18 by default; higher is clamped)."),
    transaction: str | None = typer.Option(None, "--transaction", help="Store it as a transactional message: "
                                           "prepared (half), commit or rollback; not: an ordinary one.",
                                           show_default=False, click_type=click.Choice(
                                               ["prepared", "commit", "rollback", "not"], case_sensitive=False)),
    flag: int = typer.Option(0, "--flag", help="The message's opaque int flag."),
    born_host: str | None = typer.Option(None, "--born-host", help="Producer address ip:port (default: "
                                         "127.0.0.1:0).", show_default=False),
    store_host: str | None = typer.Option(None, "--store-host", help="Broker address ip:port (the msgId's address; "
                                          "default: the store's newest record's, else 127.0.0.1:10911).",
                                          show_default=False),
    batch: str | None = typer.Option(None, "--batch", help="JSONL file (or - for stdin): one message per line.",
                                     show_default=False),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Most messages per broker batch (--batch)."),
    queues: int = QUEUES,
    flush: str | None = FLUSH,
    config: Path | None = CONFIG,
    register_topics: bool = REGISTER,
    preallocate: bool = PREALLOCATE,
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
) -> None:
    """Append a message (or a JSONL file of them) as the broker's putMessage/putMessages would.

    The store sets storeTimestamp, bodyCRC and offsets; a delay level moves the message to
    SCHEDULE_TOPIC_XXXX; prepared and rolled-back messages get queue offset 0 and stay out of
    consume queues. A message gets a UNIQ_KEY like a producer's, and --compress compresses
    its body the way a producer does. With --batch, each line holds
    decode-schema names (topic, queueId, body base64 or bodyText, flag, bornTimestamp,
    bornHost, properties) plus tags, keys and delayLevel; runs of consecutive lines with one
    topic, queue and hosts go in as broker batches (a batch that does not fit the segment
    moves to the next one whole), delayed lines one by one, lines without queueId round-robin
    over --queues. Refused input writes nothing and exits 2.

    Example: [bold]rmqtool append /tmp/store --topic OrderTopic --tags TagA --keys "order-1 user-7" --body hi[/]
    Example: [bold]rmqtool append /tmp/store --batch fixtures/rows.jsonl --json[/]
    """
    from rmqtool.engine.producer import build_message

    cfg = _config(config, preallocate)
    if batch is not None:
        if topic is not None or body is not None or body_file is not None or compress is not None:
            raise RmqError("--batch takes its messages from the file: drop --topic/--body/--compress "
                           "(a producer does not compress batches)")
        if born_host:
            raise RmqError("--batch takes bornHost from each line: drop --born-host")
        from rmqtool.io.sources import Source
        from rmqtool.load.writer import load

        source = Source(batch, "jsonl")
        with output.progress("append", None) as advance:
            summary = load(store, source, load_options(cfg, None, queues, None, store_host), flush=flush,
                           batch_size=batch_size, register_topics=register_topics, progress=advance,
                           command="append --batch")
        output.emit_now(summary.to_json(), "appended", as_json)
        return
    if not topic:
        raise RmqError("give --topic (or --batch FILE)")
    msg = build_message(topic, _body(body, body_file), queue_id=queue, flag=flag, tags=tags, keys=keys,
                        user=_properties(prop), delay_level=delay_level, transaction=transaction,
                        hosts=_hosts(born_host, store_host), compress=compress)
    from rmqtool.engine.commitlog import producer_refusal

    refusal = producer_refusal(cfg, msg)  # before the store is opened: a refused message creates nothing
    if refusal is not None:
        raise RmqError(f"{refusal.status.value}: {refusal.field}: {refusal.reason}")
    from rmqtool.engine.put import put_one

    result = put_one(store, cfg, msg, flush=flush, register_topics=register_topics,
                     keep_store_host=store_host is not None)
    if not result.ok:
        raise RmqError(f"{result.status.value}: {result.reason}")
    doc = {**result.to_json(), "topic": msg.topic, "queueId": msg.queue_id}
    output.emit(doc, "appended", as_json)


def import_(
    store: Path = typer.Argument(..., help="Store root (created when missing).", show_default=False),
    source: Path = typer.Argument(..., help="An export (JSONL or Parquet, decode schema) or producer rows "
                                  "(JSONL, Parquet or CSV).", show_default=False),
    flush: str | None = FLUSH,
    config: Path | None = CONFIG,
    store_timestamp: str | None = STORE_TIMESTAMP,
    time_unit: str | None = TIME_UNIT,
    queues: int = QUEUES,
    queue_by: str | None = QUEUE_BY,
    register_topics: bool = REGISTER,
    preallocate: bool = PREALLOCATE,
    skip_existing: bool = typer.Option(False, "--skip-existing", help="Skip the export's records the store "
                                       "holds already (same offset, times, properties and body) instead of refusing."),
    repack: bool = typer.Option(False, "--repack", help="Write an export's records at the store's write position, "
                                "one after another, queue offsets continuing (as the broker would have appended "
                                "them here), instead of at their commitLogOffset: for a salvage with gaps. Their "
                                "offset msgIds change."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
) -> None:
    """Replay an export, writing every record as it was stored; or load producer rows.

    Producer rows (the names of `append --batch` lines, no propertiesString) become the
    messages a producer would send, all stored at one --store-timestamp, exactly as
    `spark-load` writes them.

    An export's records keep storeTimestamp, hosts, flag, sysFlag, reconsumeTimes and the
    exact propertiesString (a delayed record already on SCHEDULE_TOPIC_XXXX is not moved
    again), and go back to their commitLogOffset: where a broker batch rolled to the next
    segment, it rolls again. A record that is not at the store's write position (a gap, an
    overlap, an offset going backwards) is refused. Export -> import into an empty store (the
    export's geometry, or the same config) reproduces the commitlog, consume queues and index
    entries byte for byte.
    A refused row is an error naming its line (JSONL) or row, and the store is left as it was.
    Records the store holds already are refused (--skip-existing: skipped and counted). With
    --repack the records go one after another from the write position instead (a salvage's gaps
    closed), their queue offsets continue each queue's and their offset msgIds change. SOURCE
    may be a folder of files, such as a spark-export's Parquet parts, read in name order.

    Example: [bold]rmqtool import /tmp/loaded fixtures/rows.jsonl --config fixtures/broker.conf[/]
    Example: [bold]rmqtool export fixtures/store --out /tmp/export.jsonl --force[/]
    Example: [bold]rmqtool import /tmp/copy /tmp/export.jsonl --config fixtures/broker.conf[/]
    """
    from rmqtool.io.sources import open_input
    from rmqtool.load.writer import load

    cfg = _config(config, preallocate)
    opts = load_options(cfg, store_timestamp, queues, queue_by, time_unit=time_unit)
    if str(source) == "-":
        raise RmqError("import reads a file, not stdin (use append --batch - for lines on stdin)")
    if repack and skip_existing:
        raise RmqError("--repack and --skip-existing exclude each other: repacked records have new offsets")
    with output.progress("import", None) as advance:
        summary = load(store, open_input(source), opts, flush=flush, register_topics=register_topics, progress=advance,
                       skip_existing=skip_existing, repack=repack)
    output.emit_now(summary.to_json(), "imported", as_json)
    if summary.repacked and not as_json:
        output.note("import: the records were written at new offsets: their offset msgIds changed (their "
                    "UNIQ_KEY client msgIds did not)")


def export(
    store: Path = typer.Argument(..., help="Store root.", show_default=False),
    out: Path | None = typer.Option(None, "--out", help="Output file (default, or -: JSONL on stdout).",
                                    show_default=False),
    fmt: str | None = typer.Option(None, "--format", help="Output format (default: from the --out suffix, "
                                   ".parquet or .pq for Parquet; .csv refused; JSONL otherwise).", show_default=False,
                                   click_type=click.Choice(["jsonl", "parquet"])),
    decompress: bool = typer.Option(False, "--decompress", help="Write compressed messages with plain bodies "
                                    "(codec bits cleared, bodyCRC and storeSize recomputed): the rows no longer "
                                    "import into the same offsets."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing output file."),
    topic: str | None = selecting.TOPIC,
    queue: int | None = selecting.QUEUE,
    tag: str | None = selecting.TAG,
    key: str | None = selecting.KEY,
    begin: str | None = selecting.BEGIN,
    end: str | None = selecting.END,
    time_unit: str | None = TIME_UNIT,
    config: Path | None = CONFIG,
) -> None:
    """Write every message in the decode JSON schema, ready for `import`; or those of a topic, queue, tag, key or
    time range.

    Read-only. Bodies are kept as stored (compressed ones too), so an import reproduces the
    store byte for byte; --decompress writes plain bodies instead. The store's geometry (segment,
    queue-file and index sizes, its broker address) goes with the rows: Parquet metadata, or a
    FILE.geometry.json beside a JSONL file; import into a new store takes it. Corrupt regions are skipped
    with a warning and exit code 1. --topic, --queue, --tag, --key, --begin and --end select together,
    as in `decode commitlog`; a selection that keeps nothing writes nothing and exits 3.

    Example: [bold]rmqtool export fixtures/store --out /tmp/export.parquet[/]

    Example: [bold]rmqtool export fixtures/store --topic OrderTopic --tag TagA --out /tmp/taga.jsonl[/]
    """
    from rmqtool.io.arrowstart import without_pandas

    without_pandas()  # before the first rows: this process holds no pandas object
    from rmqtool.engine.reader import open_reader
    from rmqtool.ops.export import export_store

    chosen = selecting.selection_of(topic, queue, tag, key, begin, end, time_unit)
    reader = open_reader(store, config)
    out = None if out == Path("-") else out
    summary = export_store(reader, out, fmt, decompress=decompress, overwrite=force,
                           selection=chosen if chosen.narrows else None)
    if summary.corrupt_regions:
        output.warn(f"{summary.corrupt_regions} corrupt regions skipped (see `rmqtool decode commitlog`)")
        raise typer.Exit(EXIT_PROBLEM)
    if out is not None:
        output.stderr.print(f"{summary.messages} messages written to {out}")
