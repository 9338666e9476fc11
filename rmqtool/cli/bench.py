"""`rmqtool bench ...`: throughput measurements."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output

app = typer.Typer(help="Measure throughput (messages/s, MB/s, peak RSS).", no_args_is_help=True)


@app.command("scan")
def scan(
    store: Path | None = typer.Argument(None, help="Store to scan; omitted: generate one in a temp dir."),
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages to generate."),
    body_size: int = typer.Option(100, "--body-size", min=0, help="Body bytes of generated messages."),
    mode: str = typer.Option("full", "--mode", help="full (every field, every CRC) or headers (fixed fields)."),
    repeat: int = typer.Option(3, "--repeat", min=1, help="Runs; the best is reported."),
    layout: str = typer.Option("plain", "--layout", help="Generated store's layout: plain, dledger (the log "
                               "in DLedger entries) or rocksdb (the queues in a RocksDB database)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
    config: Path | None = typer.Option(None, "--config", help="broker.conf of STORE."),
) -> None:
    """Scan a commitlog (or, with --mode consumequeue, every consume queue) and report messages/s and MB/s.

    Example: [bold]rmqtool bench scan --messages 2000000 --body-size 100 --mode full --json[/]
    """
    from rmqtool.bench.layouts import LAYOUTS
    from rmqtool.bench.scan import MODES, run_scan_bench

    if mode not in MODES:
        raise typer.BadParameter(f"must be one of {', '.join(MODES)}", param_hint="--mode")
    if layout not in LAYOUTS:
        raise typer.BadParameter(f"must be one of {', '.join(LAYOUTS)}", param_hint="--layout")
    result = run_scan_bench(store, messages=messages, body_size=body_size, mode=mode, repeat=repeat,
                            config=config, progress=output.stderr, layout=layout)
    output.emit(result, f"bench scan ({mode})", as_json)


@app.command("append")
def append(
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages to append."),
    body_size: int = typer.Option(100, "--body-size", min=0, help="Body bytes per message."),
    batch: int = typer.Option(1, "--batch", min=1, help="Messages per put (1: single putMessage; K: putMessages)."),
    flush: str = typer.Option("async", "--flush", help="async (page cache) or sync (fdatasync per put)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
) -> None:
    """Append to a fresh store (1 GiB segments, queues and index dispatched) and report messages/s.

    Example: [bold]rmqtool bench append --messages 2000000 --batch 256 --body-size 100 --json[/]
    """
    from rmqtool.bench.append import run_append_bench

    result = run_append_bench(messages=messages, body_size=body_size, batch=batch, flush=flush,
                              progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, "bench append", as_json)


@app.command("import")
def import_(
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Rows to make and import."),
    body_size: int = typer.Option(100, "--body-size", min=0, help="Body bytes per message."),
    fmt: str = typer.Option("parquet", "--format", help="Input format: parquet or jsonl."),
    rows: str = typer.Option("producer", "--rows", help="producer: producer rows (binary bodies, tags, keys); "
                             "export: an export of a generated store, replayed as stored."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
) -> None:
    """Import a file into a fresh store (read, check, plan, write, dispatch) and report messages/s,
    next to `bench append --batch 256` of the same messages in the same run.

    Example: [bold]rmqtool bench import --messages 1000000 --format parquet --json[/]
    """
    from rmqtool.bench.transfer import run_import_bench

    result = run_import_bench(messages=messages, body_size=body_size, fmt=fmt, rows=rows,
                              progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, "bench import", as_json)


@app.command("export")
def export(
    store: Path | None = typer.Argument(None, help="Store to export; omitted: generate one (queues and index too)."),
    fmt: str = typer.Option("parquet", "--format", help="parquet or jsonl."),
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages to generate."),
    body_size: int = typer.Option(100, "--body-size", min=0, help="Body bytes of generated messages."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
    config: Path | None = typer.Option(None, "--config", help="broker.conf of STORE."),
) -> None:
    """Export a store (to a temporary file) and report messages/s, peak RSS and the ratio to a full
    scan of the same store in the same run.

    Example: [bold]rmqtool bench export --messages 1000000 --format jsonl --json[/]
    """
    from rmqtool.bench.readpath import run_export_bench

    result = run_export_bench(store, fmt=fmt, messages=messages, body_size=body_size, config=config,
                              progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, f"bench export ({fmt})", as_json)


@app.command("verify")
def verify(
    store: Path | None = typer.Argument(None, help="Store to verify; omitted: generate one (queues and index too)."),
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages to generate."),
    body_size: int = typer.Option(100, "--body-size", min=0, help="Body bytes of generated messages."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
    config: Path | None = typer.Option(None, "--config", help="broker.conf of STORE."),
) -> None:
    """Verify a store and report messages/s, peak RSS and the ratio to a full scan in the same run.

    Example: [bold]rmqtool bench verify --messages 4000000 --json[/]
    """
    from rmqtool.bench.readpath import run_verify_bench

    result = run_verify_bench(store, messages=messages, body_size=body_size, config=config,
                              progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, "bench verify", as_json)


@app.command("spark-export")
def spark_export(
    store: Path | None = typer.Argument(None, help="Store to export; omitted: generate one."),
    master: list[str] = typer.Option(["local[1]", "local[2]"], "--master", help="Spark masters to run (repeat)."),
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages to generate."),
    body_size: int = typer.Option(100, "--body-size", min=0, help="Body bytes of generated messages."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
    config: Path | None = typer.Option(None, "--config", help="broker.conf of STORE."),
) -> None:
    """spark-export (Parquet) on each master, after a warm-up export; messages/s and ratios.

    Example: [bold]rmqtool bench spark-export --messages 1000000 --master local[1] --master local[2] --json[/]
    """
    from rmqtool.bench.readpath import run_spark_export_bench

    result = run_spark_export_bench(store, masters=master, messages=messages, body_size=body_size, config=config,
                                    progress=output.stderr if output.stderr.is_terminal else None)
    if as_json:
        output.emit_json(result)
    else:
        for name, part in result["runs"].items():
            output.stdout.print(output.key_values(name, part))
        output.stdout.print(output.key_values("ratio to the first master", result["ratioToFirstMaster"]))


@app.command("spark-load")
def spark_load(
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Producer rows to generate and load."),
    body_size: int = typer.Option(100, "--body-size", min=0, help="Body bytes per row."),
    master: list[str] = typer.Option(["local[1]", "local[2]"], "--master", help="Spark masters to run (repeat)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
) -> None:
    """Load generated rows with `import` and with spark-load on each master; rows/s and ratios.

    Example: [bold]rmqtool bench spark-load --messages 1000000 --json[/]
    """
    from rmqtool.bench.sparkload import run_spark_load_bench

    result = run_spark_load_bench(messages=messages, body_size=body_size, masters=master,
                                  progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, "bench spark-load", as_json)


@app.command("crash")
def crash(
    rounds: int = typer.Option(20, "--rounds", min=1, help="Writer processes to kill."),
    flush: str = typer.Option("sync", "--flush", help="sync or async."),
    seed: int | None = typer.Option(None, "--seed", help="Random seed for the kill moments."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
) -> None:
    """Kill appending writers with SIGKILL at random moments, recover, and count lost acknowledged messages.

    Example: [bold]rmqtool bench crash --rounds 50 --flush sync --json[/]
    """
    from rmqtool.bench.crash import run_crash_rounds

    result = run_crash_rounds(rounds, flush, seed)
    output.emit(result, "bench crash", as_json)
    if result["lost"] or result["problems"]:
        raise typer.Exit(1)


@app.command("recover")
def recover(
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages in the generated store."),
    body_size: int = typer.Option(1024, "--body-size", min=0, help="Body bytes per message."),
    lookups: int = typer.Option(2000, "--lookups", min=10, help="msgId and unique-key lookups to time."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
) -> None:
    """Crash-recover a generated store (every queue and index key rebuilt), then time msgId and
    key lookups (p50/p99, in process) and verify on it.

    Example: [bold]rmqtool bench recover --messages 1000000 --body-size 1024 --json[/]
    """
    from rmqtool.bench.recovery import run_recovery_bench

    result = run_recovery_bench(messages=messages, body_size=body_size, lookups=lookups,
                                progress=output.stderr if output.stderr.is_terminal else None)
    if as_json:
        output.emit_json(result)
    else:
        for name, part in result.items():
            output.stdout.print(output.key_values(name, part))
