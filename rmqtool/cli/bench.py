"""`rmqtool bench ...`: throughput measurements."""

from __future__ import annotations

from pathlib import Path

import click
import typer

from rmqtool.cli import output
from rmqtool.errors import EXIT_PROBLEM

app = typer.Typer(help="Measure throughput (messages/s, MB/s, peak RSS)."
                  "\n\nExample: [bold]rmqtool bench scan fixtures/store --config fixtures/broker.conf[/]",
                  no_args_is_help=True)
JSON = typer.Option(False, "--json", help="One JSON object.")
STORE_CONFIG = typer.Option(None, "--config", help="broker.conf of STORE.", show_default=False)
GENERATED_BODY_SIZE = typer.Option(100, "--body-size", min=0, help="Body bytes of generated messages.")


@app.command("scan")
def scan(
    store: Path | None = typer.Argument(None, help="Store to scan; omitted: generate one in a temp dir.",
                                        show_default=False),
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages to generate."),
    body_size: int = GENERATED_BODY_SIZE,
    mode: str = typer.Option("full", "--mode", help="full: every field, every CRC; headers: the fixed fields; "
                             "consumequeue: every consume queue instead of the commitlog.",
                             click_type=click.Choice(["full", "headers", "consumequeue"])),
    repeat: int = typer.Option(3, "--repeat", min=1, help="Runs; the best is reported."),
    layout: str = typer.Option("plain", "--layout", help="Generated store's layout: plain; dledger: the log "
                               "in DLedger entries; rocksdb: the queues in a RocksDB database.",
                               click_type=click.Choice(["plain", "dledger", "rocksdb"])),
    as_json: bool = JSON,
    config: Path | None = STORE_CONFIG,
) -> None:
    """Scan a commitlog (or, with --mode consumequeue, every consume queue) and report messages/s and MB/s.

    Example: [bold]rmqtool bench scan --messages 200000 --mode headers --json[/]
    Example: [bold]rmqtool bench scan fixtures/store --config fixtures/broker.conf --mode full[/]
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
    batch: int = typer.Option(1, "--batch-size", min=1,
                               help="Messages per put (1: single putMessage; K: putMessages)."),
    flush: str = typer.Option("async", "--flush", help="async: page cache; sync: fdatasync per put.",
                              click_type=click.Choice(["async", "sync"])),
    as_json: bool = JSON,
) -> None:
    """Append to a fresh store (1 GiB segments, queues and index dispatched) and report messages/s.

    Example: [bold]rmqtool bench append --messages 200000 --batch-size 256 --json[/]
    """
    from rmqtool.bench.append import run_append_bench

    result = run_append_bench(messages=messages, body_size=body_size, batch=batch, flush=flush,
                              progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, "bench append", as_json)


@app.command("import")
def import_(
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Rows to make and import."),
    body_size: int = typer.Option(100, "--body-size", min=0, help="Body bytes per message."),
    fmt: str = typer.Option("parquet", "--format", help="Input format.",
                            click_type=click.Choice(["parquet", "jsonl"])),
    rows: str = typer.Option("producer", "--rows", help="producer: producer rows (binary bodies, tags, keys); "
                             "export: an export of a generated store, replayed as stored.",
                             click_type=click.Choice(["producer", "export"])),
    as_json: bool = JSON,
) -> None:
    """Import a file into a fresh store and report messages/s, next to `bench append`.

    The import reads, checks, plans, writes and dispatches; `bench append --batch-size 256` of the
    same messages runs beside it in the same run.

    Example: [bold]rmqtool bench import --messages 100000 --format jsonl --json[/]
    """
    from rmqtool.bench.transfer import run_import_bench

    result = run_import_bench(messages=messages, body_size=body_size, fmt=fmt, rows=rows,
                              progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, "bench import", as_json)


@app.command("export")
def export(
    store: Path | None = typer.Argument(None, help="Store to export; omitted: generate one (queues and index too).",
                                        show_default=False),
    fmt: str = typer.Option("parquet", "--format", help="Output format.",
                            click_type=click.Choice(["parquet", "jsonl"])),
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages to generate."),
    body_size: int = GENERATED_BODY_SIZE,
    as_json: bool = JSON,
    config: Path | None = STORE_CONFIG,
) -> None:
    """Export a store (to a temporary file) and report messages/s, peak RSS and the ratio to a scan.

    The full scan of the same store runs beside it in the same run.

    Example: [bold]rmqtool bench export fixtures/store --config fixtures/broker.conf --format jsonl --json[/]
    """
    from rmqtool.bench.readpath import run_export_bench

    result = run_export_bench(store, fmt=fmt, messages=messages, body_size=body_size, config=config,
                              progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, f"bench export ({fmt})", as_json)


@app.command("verify")
def verify(
    store: Path | None = typer.Argument(None, help="Store to verify; omitted: generate one (queues and index too).",
                                        show_default=False),
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages to generate."),
    body_size: int = GENERATED_BODY_SIZE,
    as_json: bool = JSON,
    config: Path | None = typer.Option(None, "--config", help="broker.conf of STORE, or the settings of the "
                                       "generated store (maxHashSlotNum=64 and maxIndexNum=256: many small "
                                       "index files).", show_default=False),
) -> None:
    """Verify a store and report messages/s, peak RSS and the ratio to a full scan in the same run.

    Example: [bold]rmqtool bench verify fixtures/store --config fixtures/broker.conf --json[/]
    """
    from rmqtool.bench.readpath import run_verify_bench

    result = run_verify_bench(store, messages=messages, body_size=body_size, config=config,
                              progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, "bench verify", as_json)


@app.command("render")
def render(
    store: Path | None = typer.Argument(None, help="Store to render; omitted: generate one.", show_default=False),
    messages: int = typer.Option(300_000, "--messages", min=1, help="Messages to generate."),
    body_size: int = GENERATED_BODY_SIZE,
    repeat: int = typer.Option(2, "--repeat", min=1, help="Runs of each; the best counts."),
    as_json: bool = JSON,
    config: Path | None = STORE_CONFIG,
) -> None:
    """The decode table against --jsonl on the same store, each in a fresh process: rows/s and the ratio.

    Example: [bold]rmqtool bench render --messages 20000 --json[/]
    """
    from rmqtool.bench.render import run_render_bench

    result = run_render_bench(store, messages=messages, body_size=body_size, repeat=repeat, config=config,
                              progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, "bench render", as_json)


@app.command("report")
def report(
    store: Path | None = typer.Argument(None, help="Store to draw (read only); omitted: generate one.",
                                        show_default=False),
    messages: int = typer.Option(300_000, "--messages", min=1, help="Messages to generate."),
    body_size: int = GENERATED_BODY_SIZE,
    repeat: int = typer.Option(2, "--repeat", min=1, help="Timed runs of each; the fastest counts."),
    as_json: bool = JSON,
    config: Path | None = STORE_CONFIG,
) -> None:
    """`report` (the HTML page) against `info --json` on the same store, each a fresh process: seconds,
    their ratio, peak RSS and the page's size.

    Example: [bold]rmqtool bench report --messages 20000 --json[/]
    """
    from rmqtool.bench.report import run_report_bench

    result = run_report_bench(store, messages=messages, body_size=body_size, repeat=repeat, config=config,
                              progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, "bench report", as_json)


@app.command("consumers")
def consumers(
    store: Path | None = typer.Argument(None, help="Store to read (never written: the offsets go into a "
                                        "symlinked overlay); omitted: generate one.", show_default=False),
    groups: int = typer.Option(1000, "--groups", min=1, help="Consumer groups to commit offsets for."),
    queues: int = typer.Option(64, "--queues", min=1, help="Queues of the generated store's topic (with STORE, "
                               "each group commits on every queue of one of its topics)."),
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages to generate."),
    body_size: int = GENERATED_BODY_SIZE,
    repeat: int = typer.Option(3, "--repeat", min=1, help="Timed runs; the one with the least CPU counts."),
    as_json: bool = JSON,
    config: Path | None = STORE_CONFIG,
) -> None:
    """`consumers --json` with GROUPS groups on every queue of the store, each run a fresh process: wall and
    CPU seconds, rows listed, peak RSS.

    Example: [bold]rmqtool bench consumers --groups 1000 --queues 64 --json[/]
    """
    from rmqtool.bench.consumers import run_consumers_bench

    result = run_consumers_bench(store, groups=groups, queues=queues, messages=messages, body_size=body_size,
                                 repeat=repeat, config=config,
                                 progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, "bench consumers", as_json)


@app.command("replicas")
def replicas(
    store: Path | None = typer.Argument(None, help="Store to compare and hash (read only); omitted: generate one.",
                                        show_default=False),
    copy: Path | None = typer.Argument(None, help="An identical copy of STORE for diff (read only); omitted: a "
                                       "copy is made in a temp dir.", show_default=False),
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages to generate."),
    body_size: int = typer.Option(1024, "--body-size", min=0, help="Body bytes of generated messages."),
    repeat: int = typer.Option(2, "--repeat", min=1, help="Timed runs of each; the fastest counts."),
    as_json: bool = JSON,
    config: Path | None = STORE_CONFIG,
) -> None:
    """`diff STORE COPY` and `hash STORE` in fresh processes against reading the same commitlog bytes once:
    GB/s of commitlog, the ratio to that floor, and peak RSS.

    Example: [bold]rmqtool bench replicas --messages 200000 --json[/]
    Example: [bold]rmqtool bench replicas /tmp/scale/s1k /tmp/scale/s1k-copy --json[/]
    """
    from rmqtool.bench.replicas import run_replicas_bench

    result = run_replicas_bench(store, copy, messages=messages, body_size=body_size, repeat=repeat, config=config,
                                progress=output.stderr if output.stderr.is_terminal else None)
    if as_json:
        output.emit_json(result)
        return
    output.stdout.print(output.key_values("bench replicas", {k: str(v) for k, v in result.items()
                                                             if not isinstance(v, dict)}))
    for name in ("diff", "hash"):
        output.stdout.print(output.key_values(name, {k: str(v) for k, v in result[name].items()}))


@app.command("replicate")
def replicate(
    store: Path | None = typer.Argument(None, help="Master store to serve (read only); omitted: generate one of "
                                        "one segment.", show_default=False),
    messages: int = typer.Option(898_000, "--messages", min=1, help="Messages to generate for the catch-up."),
    body_size: int = typer.Option(1000, "--body-size", min=0, help="Body bytes of generated and put messages."),
    sync_messages: int = typer.Option(20_000, "--sync-messages", min=1, help="Messages per SYNC run (puts = this "
                                      "/ batch)."),
    ack: list[str] = typer.Option(["flushed", "written"], "--ack", help="Follower acks of the SYNC runs (repeat).",
                                  click_type=click.Choice(["flushed", "written"])),
    batch: list[int] = typer.Option([1, 32, 256], "--batch", min=1, help="Messages per put of the SYNC runs "
                                    "(repeat)."),
    catch_up: bool = typer.Option(True, "--catch-up/--no-catch-up", help="Measure the catch-up first."),
    as_json: bool = JSON,
    config: Path | None = STORE_CONFIG,
) -> None:
    """Replication on 127.0.0.1: an empty `ha follow` process catching up with a served store (MB/s, peak
    RSS), and SYNC_MASTER puts with one follower (puts/s, p50/p99 latency) in batches of 1, 32 and 256.

    Example: [bold]rmqtool bench replicate --messages 100000 --sync-messages 5000 --json[/]
    Example: [bold]rmqtool bench replicate --no-catch-up --ack written --batch 1[/]
    """
    from rmqtool.bench.replicate import run_replicate_bench

    result = run_replicate_bench(store, messages=messages, body_size=body_size, sync_messages=sync_messages,
                                 config=config, progress=output.stderr if output.stderr.is_terminal else None,
                                 acks=tuple(ack), batches=tuple(batch), catch_up=catch_up)
    if as_json:
        output.emit_json(result)
        return
    if result["catchUp"] is not None:
        output.stdout.print(output.key_values("catch-up", {k: str(v) for k, v in result["catchUp"].items()}))
    t = output.table("SYNC puts, one follower", ["ack", "batch", "puts", "puts/s", "messages/s", "p50 us", "p99 us",
                                                 "statuses"])
    for row in result["sync"]:
        t.add_row(row["ack"], str(row["batch"]), str(row["puts"]), str(row["putsPerSecond"]),
                  str(row["messagesPerSecond"]), str(row["p50Us"]), str(row["p99Us"]),
                  ", ".join(f"{k} {v}" for k, v in row["statuses"].items()))
    output.stdout.print(t)


@app.command("start")
def start(
    store: Path | None = typer.Argument(None, help="Store to query; omitted: generate one.", show_default=False),
    runs: int = typer.Option(20, "--runs", min=1, help="Fresh processes of each command."),
    as_json: bool = JSON,
    config: Path | None = STORE_CONFIG,
) -> None:
    """What a short command costs as a process: --version, a query as JSON and as a card, info, consumers, decode
    and verify as JSON, and the first verify after an install (an empty kernel cache).

    Scripts that run one lookup per process pay this on every call. The commands take turns,
    and each is reported as the fastest and the median wall time and the median CPU time, with the CPU
    ratios of each short command to --version and of the first verify to a warm one.

    Example: [bold]rmqtool bench start --runs 10 --json[/]
    """
    from rmqtool.bench.start import run_start_bench

    result = run_start_bench(store, runs=runs, config=config,
                             progress=output.stderr if output.stderr.is_terminal else None)
    if as_json:
        output.emit_json(result)
    else:
        for name, times in result.items():
            if isinstance(times, dict):
                output.stdout.print(output.key_values(name, times))


@app.command("spark-export")
def spark_export(
    store: Path | None = typer.Argument(None, help="Store to export; omitted: generate one.", show_default=False),
    master: list[str] = typer.Option(["local[1]", "local[2]"], "--master", help="Spark masters to run (repeat)."),
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages to generate."),
    stores: int = typer.Option(1, "--stores", min=1, help="Export this many copies of the store together, as the "
                               "stores of as many brokers."),
    body_size: int = GENERATED_BODY_SIZE,
    as_json: bool = JSON,
    config: Path | None = STORE_CONFIG,
) -> None:
    """spark-export (Parquet) on each master, after a warm-up export; messages/s and ratios.

    Example: [bold]rmqtool bench spark-export --messages 100000 --stores 2 --master local[1] --master local[2] --json[/]
    """
    from rmqtool.bench.readpath import run_spark_export_bench

    result = run_spark_export_bench(store, masters=master, messages=messages, body_size=body_size, stores=stores,
                                    config=config, progress=output.stderr if output.stderr.is_terminal else None)
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
    as_json: bool = JSON,
) -> None:
    """Load generated rows with `import` and with spark-load on each master; rows/s and ratios.

    Example: [bold]rmqtool bench spark-load --messages 100000 --json[/]
    """
    from rmqtool.bench.sparkload import run_spark_load_bench

    result = run_spark_load_bench(messages=messages, body_size=body_size, masters=master,
                                  progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, "bench spark-load", as_json)


@app.command("rebuild")
def rebuild(
    store: Path | None = typer.Argument(None, help="Store to copy and rebuild; omitted: generate one.",
                                        show_default=False),
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages to generate."),
    body_size: int = GENERATED_BODY_SIZE,
    repeat: int = typer.Option(2, "--repeat", min=1, help="Runs of each; the fastest counts."),
    as_json: bool = JSON,
    config: Path | None = STORE_CONFIG,
) -> None:
    """`rebuild --apply` against `recover --thorough`, both on a copy with its queues and index deleted.

    Example: [bold]rmqtool bench rebuild --messages 200000 --json[/]
    """
    from rmqtool.bench.rebuild import run_rebuild_bench

    result = run_rebuild_bench(store, messages=messages, body_size=body_size, repeat=repeat, config=config,
                               progress=output.stderr if output.stderr.is_terminal else None)
    output.emit(result, "bench rebuild", as_json)


@app.command("doctor")
def doctor(
    store: Path | None = typer.Argument(None, help="Store to copy, damage and mend (never written itself); omitted: "
                                        "generate one (queues and index too).", show_default=False),
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages to generate."),
    body_size: int = GENERATED_BODY_SIZE,
    repeat: int = typer.Option(1, "--repeat", min=1, help="Rounds, each on a fresh damaged copy; the least wall "
                               "and CPU seconds count, and the largest peak RSS."),
    as_json: bool = JSON,
    config: Path | None = STORE_CONFIG,
) -> None:
    """`doctor --apply` against `verify` on the same store with one damaged record, each a fresh process:
    wall and CPU seconds, peak RSS, and their ratios.

    One bit of the body of the record at the middle of the log is flipped (its body CRC fails) in a
    temp copy; verify runs on it, then doctor --apply, after an untimed run of both on a small store.
    Exit 1 when verify does not find the damage or doctor --apply does not mend it.

    Example: [bold]rmqtool bench doctor --messages 200000 --json[/]
    """
    from rmqtool.bench.doctor import run_doctor_bench

    result = run_doctor_bench(store, messages=messages, body_size=body_size, repeat=repeat, config=config,
                              progress=output.stderr if output.stderr.is_terminal else None)
    if as_json:
        output.emit_json(result)
        return
    facts = {k: v for k, v in result.items() if not isinstance(v, dict)}
    applied = result["doctorApply"]
    facts |= {"damaged record": result["damage"]["offset"], "doctor status": f"{applied['status']} "
              f"({applied['statusAccepted']})", "doctor steps": ", ".join(applied["steps"]),
              "records appended again": applied["recordsKept"],
              "ratio to verify (wall, CPU, peak RSS)": ", ".join(str(v) for v in result["ratioToVerify"].values()),
              "load average before, after": "; ".join(" ".join(map(str, v)) if v else "-"
                                                      for v in result["loadAverage"].values())}
    output.stdout.print(output.key_values("bench doctor", facts))
    t = output.table("each a fresh process", ["command", "wall s", "CPU s", "peak RSS MiB", "exit", "problems"])
    for name, run in (("verify --json", result["verify"]), ("doctor --apply --json", applied)):
        t.add_row(name, f"{run['wallSeconds']:.2f}", f"{run['cpuSeconds']:.2f}", f"{run['peakRssBytes'] / 2**20:.1f}",
                  str(run["exitCode"]), str(run["problems"]))
    output.stdout.print(t)


@app.command("crash")
def crash(
    rounds: int = typer.Option(20, "--rounds", min=1, help="Writer processes to kill."),
    flush: str = typer.Option("sync", "--flush", help="The writers' flush mode.",
                              click_type=click.Choice(["sync", "async"])),
    seed: int | None = typer.Option(None, "--seed", help="Random seed for the kill moments (default: a fresh one).",
                                    show_default=False),
    as_json: bool = JSON,
) -> None:
    """Kill appending writers with SIGKILL at random moments, recover, and count lost acknowledged messages.

    Example: [bold]rmqtool bench crash --rounds 5 --flush sync --json[/]
    """
    from rmqtool.bench.crash import run_crash_rounds

    result = run_crash_rounds(rounds, flush, seed)
    output.emit(result, "bench crash", as_json)
    if result["lost"] or result["problems"]:
        raise typer.Exit(EXIT_PROBLEM)


@app.command("recover")
def recover(
    messages: int = typer.Option(1_000_000, "--messages", min=1, help="Messages in the generated store."),
    body_size: int = typer.Option(1024, "--body-size", min=0, help="Body bytes per message."),
    lookups: int = typer.Option(2000, "--lookups", min=10, help="msgId and unique-key lookups to time."),
    as_json: bool = JSON,
) -> None:
    """Crash-recover a generated store, then time lookups and verify on it.

    Recovery rebuilds every queue and index key; msgId and key lookups are timed in process
    (p50/p99).

    Example: [bold]rmqtool bench recover --messages 100000 --body-size 1024 --json[/]
    """
    from rmqtool.bench.recovery import run_recovery_bench

    result = run_recovery_bench(messages=messages, body_size=body_size, lookups=lookups,
                                progress=output.stderr if output.stderr.is_terminal else None)
    if as_json:
        output.emit_json(result)
    else:
        for name, part in result.items():
            output.stdout.print(output.key_values(name, part))


@app.command("scale")
def scale(
    root: Path = typer.Argument(..., help="Folder for the store to build; it must not exist. Keep several "
                                "times its size free.", show_default=False),
    gib: float = typer.Option(10.0, "--gib", min=0.001, help="Commitlog size to build, in GiB."),
    body_size: int = typer.Option(1024, "--body-size", min=1, help="Body bytes per message."),
    chunks: int = typer.Option(10, "--chunks", min=1, help="Loads the store is built in, each with its own "
                               "storeTimestamp (a minute apart)."),
    samples: int = typer.Option(40, "--lookups", min=1, help="Random messages looked up by queue offset, msgId, "
                                "key and time, each lookup a fresh process."),
    as_json: bool = JSON,
    config: Path | None = typer.Option(None, "--config", help="broker.conf for the store's geometry (segment, "
                                       "queue-file and index sizes).", show_default=False),
) -> None:
    """Build a store of many GiB, then time every whole-store command on it in a fresh process with its
    peak RSS: decode, verify, recover --dry-run, export, lookups, then a crash (abort left, the log's
    last 4 KiB garbled) with recover, verify and recover --thorough.

    The store is left in ROOT for further runs; docs/scale.md has the numbers of this machine.

    Example: [bold]rmqtool bench scale /tmp/scale-1k --gib 10 --body-size 1024 --json[/]
    """
    from rmqtool.bench.scale import run_scale_bench

    result = run_scale_bench(root, gib=gib, body_size=body_size, chunks=chunks, config=config, samples=samples,
                             progress=output.note if output.stderr.is_terminal else None)
    if as_json:
        output.emit_json(result)
        return
    facts = {k: v for k, v in result.items() if not isinstance(v, list)}
    output.stdout.print(output.key_values("bench scale", facts))
    t = output.table("whole-store commands", ["command", "seconds", "messages/s", "peak RSS MiB", "exit"])
    for c in result["commands"]:
        t.add_row(c["command"], f"{c['seconds']:.2f}", str(c["messagesPerSecond"]),
                  f"{c['peakRssBytes'] / 2**20:.1f}", str(c["exitCode"]))
    output.stdout.print(t)
    t = output.table("lookups, one process each", ["query", "p50 ms", "p99 ms", "lookups"])
    for q in result["lookups"]:
        t.add_row(q["lookup"], str(q["p50Ms"]), str(q["p99Ms"]), str(q["lookups"]))
    output.stdout.print(t)
