"""The SparkSession a load or an export runs in (embedded `local[*]` unless told otherwise)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rmqtool.errors import RmqError

DEFAULT_MASTER = "local[*]"
ARROW_BATCH_ROWS = 1 << 16
# Python workers allocate and free chunk-sized arrays over and over. glibc hands every large
# block back to the system and the next chunk faults fresh pages in again, which costs more
# than the work on a VM; keep freed memory in the worker's heap instead (a worker lives as long
# as the session).
WORKER_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 36), "MALLOC_TOP_PAD_": str(256 << 20)}


def get_session(master: str = DEFAULT_MASTER):
    """The active session when there is one (tests share one), else a new one on `master`.

    Workers run this interpreter (PYSPARK_PYTHON), so they import the same rmqtool.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise RmqError("spark-load and spark-export need PySpark: pip install 'rmqtool[spark]'") from None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    try:
        builder = SparkSession.builder
        for name, value in WORKER_ENV.items():
            builder = builder.config(f"spark.executorEnv.{name}", value)
        spark = (builder.master(master).appName("rmqtool")
                 .config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH_ROWS))
                 .config("spark.python.worker.reuse", "true")
                 .getOrCreate())
    except Exception as e:  # the JVM did not start: no Java, a bad master URL
        raise RmqError(f"cannot start Spark on {master}: {str(e).splitlines()[0]}") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextmanager
def job_errors(what: str) -> Iterator[None]:
    """A failed Spark job as one line (the task's own error when there is one)."""
    try:
        yield
    except RmqError:
        raise
    except Exception as e:
        if type(e).__module__.split(".")[0] not in ("pyspark", "py4j"):
            raise
        text = str(e)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        cause = next((ln for ln in reversed(lines) if "Error:" in ln or "Exception:" in ln), lines[0] if lines else "")
        raise RmqError(f"{what}: the Spark job failed: {cause[:300]}") from None
