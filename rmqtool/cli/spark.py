"""`rmqtool spark-load` and `rmqtool spark-export`: bulk load and export through PySpark."""

from __future__ import annotations

from pathlib import Path

import click
import typer

from rmqtool.cli import output
from rmqtool.cli.append import CONFIG, QUEUE_BY, QUEUES, REGISTER, STORE_TIMESTAMP, _config, load_options
from rmqtool.cli.times import TIME_UNIT

MASTER = typer.Option("local[*]", "--master", help="Spark master URL (local[*]: embedded, all cores).")
VERBOSE = typer.Option(False, "--verbose", help="Let Spark's own log (JVM warnings, log4j) through to stderr.")
THRESHOLD = typer.Option(100_000, "--spark-threshold", min=0, help="An input of fewer rows loads in this process "
                         "through import's path, into the same bytes, without starting Spark; 0: always Spark.")


def spark_load(
    inputs: list[Path] = typer.Argument(..., help="Input files or folders of producer rows, loaded in this order.",
                                        show_default=False),
    store: Path = typer.Option(..., "--store", help="Store root (created when missing).", show_default=False),
    fmt: str | None = typer.Option(None, "--format", help="Input format (default: as import reads a file: Parquet "
                                   "by its magic bytes, CSV by a .csv name, JSONL otherwise).", show_default=False,
                                   click_type=click.Choice(["jsonl", "parquet", "csv"])),
    master: str = MASTER,
    partitions: int | None = typer.Option(None, "--partitions", min=1, help="Tasks per stage (default: the "
                                          "master's parallelism).", show_default=False),
    config: Path | None = CONFIG,
    load_id: str | None = typer.Option(None, "--load-id", help="Names the load; a load id already adopted is not "
                                       "loaded again (default: derived from the inputs and settings).",
                                       show_default=False),
    store_timestamp: str | None = STORE_TIMESTAMP,
    time_unit: str | None = TIME_UNIT,
    queues: int = QUEUES,
    queue_by: str | None = QUEUE_BY,
    register_topics: bool = REGISTER,
    spark_threshold: int = THRESHOLD,
    verbose: bool = VERBOSE,
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
) -> None:
    """Load producer rows into a store with Spark: planned once, written by tasks, adopted atomically.

    Rows use the names of `append --batch` lines (topic, queueId, body or bodyText, tags, keys,
    properties, bornTimestamp, bornHost, flag). The bytes equal `rmqtool import` of the same
    rows with the same --store-timestamp. A failed or killed load leaves the store as it was.
    An input of fewer rows than --spark-threshold loads in this process instead (seconds
    sooner, the same bytes; killed, it leaves what a killed `import` leaves).

    Example: [bold]rmqtool spark-load fixtures/rows.jsonl --store /tmp/spark-loaded --config fixtures/broker.conf[/]
    """
    from rmqtool.spark.load import load_input
    from rmqtool.spark.load import spark_load as run

    opts = load_options(_config(config), store_timestamp, queues, queue_by, time_unit=time_unit)
    job = load_input(inputs, fmt, spark_threshold)
    with output.stages(job.stages) as done:
        result = run(job, store, opts, master=master, partitions=partitions, load_id=load_id,
                     explicit_ts=store_timestamp is not None, progress=done, register_topics=register_topics,
                     verbose=verbose)
    if result.in_process and not result.already:
        output.note(f"spark-load: {result.messages} rows, loaded in-process (below --spark-threshold "
                    f"{spark_threshold}); pass --spark-threshold 0 to always use Spark")
    output.emit(result.to_json(), "already loaded" if result.already else "loaded", as_json)


def _quiet_py4j(verbose: bool) -> None:
    """Unless --verbose, Python's log goes nowhere: py4j logs a traceback for a call to the JVM that
    an interrupt cut (rmqtool itself logs nothing), and the interrupt is one line of rmqtool's."""
    if not verbose:
        import logging

        logging.getLogger().addHandler(logging.NullHandler())


def spark_export(
    stores: list[Path] = typer.Argument(..., help="Store roots, one per broker.", show_default=False),
    out: Path = typer.Option(..., "--out", help="Output folder (must not exist).", show_default=False),
    fmt: str = typer.Option("parquet", "--format", help="Output format.",
                            click_type=click.Choice(["parquet", "jsonl"])),
    master: str = MASTER,
    config: list[Path] = typer.Option([], "--config", help="broker.conf of the stores: one for all, or one per "
                                      "store in their order; its brokerName names the store's broker.",
                                      show_default=False),
    broker_name: list[str] = typer.Option([], "--broker-name", help="The brokerName of each store, in their order, "
                                          "for stores whose --config names none (default: the store folder's "
                                          "name).", show_default=False),
    verbose: bool = VERBOSE,
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
) -> None:
    """Export every message of one or more brokers' stores as one dataset, one Spark task per byte range of the log.

    The driver cuts each log into byte ranges of about equal size, each starting on a record
    boundary (about two per core over all stores, and a new one at each segment's start). Rows
    are those of `rmqtool export` (decode schema) plus brokerName: the brokerName of the store's
    --config, else its --broker-name, else the name of the store's folder. One store: part files
    in log order in --out; several: each broker's in --out/brokerName=NAME/, in log order.

    Example: [bold]rmqtool spark-export fixtures/store --out /tmp/spark-export --config fixtures/broker.conf[/]
    """
    from rmqtool.spark.brokers import export_stores, per_store
    from rmqtool.spark.export import STAGES
    from rmqtool.spark.export import spark_export as run

    _quiet_py4j(verbose)
    sources = export_stores(stores, per_store(config, len(stores), "--config"),
                            per_store(broker_name, len(stores), "--broker-name"))
    with output.stages(STAGES) as done:
        result = run(sources, out, fmt=fmt, master=master, verbose=verbose, progress=done)
    output.emit(result.to_json(), "exported", as_json)
