"""`rmqtool spark-load` and `rmqtool spark-export`: bulk load and export through PySpark."""

from __future__ import annotations

from pathlib import Path

import typer

from rmqtool.cli import output
from rmqtool.cli.append import CONFIG, QUEUE_BY, QUEUES, REGISTER, STORE_TIMESTAMP, _config, load_options

MASTER = typer.Option("local[*]", "--master", help="Spark master URL (default: embedded, all cores).")
_STAGES = ["read", "plan", "write", "index", "checksum", "adopt"]


def spark_load(
    inputs: list[Path] = typer.Argument(..., help="Input files or folders of producer rows, loaded in this order."),
    store: Path = typer.Option(..., "--store", help="Store root (created when missing)."),
    fmt: str = typer.Option("jsonl", "--format", help="jsonl, parquet or csv."),
    master: str = MASTER,
    partitions: int | None = typer.Option(None, "--partitions", min=1, help="Tasks per stage (default: the "
                                          "master's parallelism)."),
    config: Path | None = CONFIG,
    load_id: str | None = typer.Option(None, "--load-id", help="Names the load; a load id already adopted is not "
                                       "loaded again (default: derived from the inputs and settings)."),
    store_timestamp: str | None = STORE_TIMESTAMP,
    queues: int = QUEUES,
    queue_by: str | None = QUEUE_BY,
    register_topics: bool = REGISTER,
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
) -> None:
    """Load producer rows into a store with Spark: planned once, written by tasks, adopted atomically.

    Rows use the names of `append --batch` lines (topic, queueId, body or bodyText, tags, keys,
    properties, bornTimestamp, bornHost, flag). The bytes equal `rmqtool import` of the same
    rows with the same --store-timestamp. A failed or killed load leaves the store as it was.

    Example: [bold]rmqtool spark-load fixtures/rows.jsonl --store /tmp/loaded --config fixtures/broker.conf[/]
    """
    from rmqtool.spark.load import spark_load as run

    opts = load_options(_config(config), store_timestamp, queues, queue_by)
    with output.stages(_STAGES) as done:
        result = run(inputs, store, opts, fmt=fmt, master=master, partitions=partitions, load_id=load_id,
                     explicit_ts=store_timestamp is not None, progress=done, register_topics=register_topics)
    output.emit(result.to_json(), "already loaded" if result.already else "loaded", as_json)


def spark_export(
    store: Path = typer.Argument(..., help="Store root."),
    out: Path = typer.Option(..., "--out", help="Output folder (must not exist)."),
    fmt: str = typer.Option("parquet", "--format", help="parquet or jsonl."),
    master: str = MASTER,
    config: Path | None = CONFIG,
    as_json: bool = typer.Option(False, "--json", help="One JSON object."),
) -> None:
    """Export every message as a dataset, one Spark task per commitlog segment.

    Rows are those of `rmqtool export` (decode schema), part files in log order.

    Example: [bold]rmqtool spark-export fixtures/store --out /tmp/export --config fixtures/broker.conf[/]
    """
    from rmqtool.spark.export import spark_export as run

    result = run(store, out, _config(config), fmt=fmt, master=master)
    output.emit(result.to_json(), "exported", as_json)
