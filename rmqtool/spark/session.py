"""The SparkSession a load or an export runs in (embedded `local[*]` unless told otherwise).

Spark talks a lot: the JVM's own warnings, log4j banners, WARN lines from Hadoop. Unless asked
to be verbose, the driver JVM starts with an errors-only log4j2 configuration (shipped with
rmqtool) and its stdout and stderr go to an unnamed temporary file, so a terminal shows only
rmqtool's own lines; the file's last line is quoted when the JVM fails to start. Verbose, the
JVM's output goes to stderr (never to stdout, which may carry JSON) at Spark's own log level.
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources

from rmqtool.errors import RmqError
from rmqtool.files.signals import STOPPED_BY

DEFAULT_MASTER = "local[*]"
ARROW_BATCH_ROWS = 1 << 16
QUIET_LOG4J = "log4j2-quiet.properties"
# Python workers allocate and free chunk-sized arrays over and over. glibc hands every large
# block back to the system and the next chunk faults fresh pages in again, which costs more
# than the work on a VM; keep freed memory in the worker's heap instead (a worker lives as long
# as the session).
WORKER_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 36), "MALLOC_TOP_PAD_": str(256 << 20)}
_SETTINGS = {
    "spark.app.name": "rmqtool",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
    "spark.python.worker.reuse": "true",
}


def get_session(master: str = DEFAULT_MASTER, verbose: bool = False):
    """The active session when there is one (tests share one), else a new one on `master`.

    Workers run this interpreter (PYSPARK_PYTHON), so they import the same rmqtool.
    """
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError:
        raise RmqError("spark-load and spark-export need PySpark: pip install 'rmqtool[spark]'") from None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    conf = _conf(master, verbose)
    gateway = None if getattr(SparkContext, "_gateway", None) else _launch(conf, master, verbose)
    try:
        SparkContext(conf=conf, gateway=gateway)
        spark = SparkSession.builder.getOrCreate()
    except Exception as e:  # a bad master URL, a cluster that does not answer
        raise RmqError(f"cannot start Spark on {master}: {_first_line(str(e))}") from None
    spark.sparkContext.setLogLevel("WARN" if verbose else "ERROR")
    return spark


def _conf(master: str, verbose: bool):
    """The session's settings: the master, no UI, workers' malloc, the quiet log4j file unless `verbose`."""
    from pyspark import SparkConf

    conf = SparkConf().setMaster(master)
    for name, value in _SETTINGS.items():
        conf.set(name, value)
    for name, value in WORKER_ENV.items():
        conf.setExecutorEnv(name, value)
    if not verbose:
        log4j = resources.files("rmqtool.spark").joinpath(QUIET_LOG4J)
        conf.set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={shlex.quote(str(log4j))}")
    return conf


def _launch(conf, master: str, verbose: bool):
    """Start the driver JVM with its output away from stdout: to stderr when `verbose`, else to a
    temporary file that is gone when the JVM is (its last line explains a JVM that did not start)."""
    from pyspark.java_gateway import launch_gateway

    with tempfile.TemporaryFile() as log:
        try:
            return launch_gateway(conf, {"stdout": 2} if verbose else {"stdout": log, "stderr": log})
        except Exception as e:  # no Java, a broken installation
            raise RmqError(f"cannot start Spark on {master}: {_first_line(str(e))}{_last_words(log)}") from None


def _last_words(log) -> str:
    """The last line the JVM wrote, as ` (line)`, or nothing."""
    log.seek(0)
    said = [ln.strip() for ln in log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    return f" ({said[-1][:300]})" if said else ""


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown error"


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
        if STOPPED_BY:  # a py4j call the interrupt cut fails after it: the command was stopped, not failed
            raise KeyboardInterrupt from e
        text = str(e)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        cause = next((ln for ln in reversed(lines) if "Error:" in ln or "Exception:" in ln), lines[0] if lines else "")
        raise RmqError(f"{what}: the Spark job failed: {cause[:300]}") from None
