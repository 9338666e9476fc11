"""A Spark job's error as one line, unless a signal stopped the command first: then the py4j call the interrupt cut
fails after it ("Answer from Java side is empty", seen on a busy machine) and the command is interrupted, not failed."""

from __future__ import annotations

import signal

import pytest

from rmqtool.errors import RmqError
from rmqtool.files.signals import STOPPED_BY
from rmqtool.spark.session import job_errors


class _Py4JError(Exception):
    __module__ = "py4j.protocol"


def test_a_py4j_error_is_one_line_naming_the_job():
    failed = r"^spark-export: the Spark job failed: Answer from Java side is empty$"
    with pytest.raises(RmqError, match=failed), job_errors("spark-export"):
        raise _Py4JError("Answer from Java side is empty")


def test_a_py4j_error_after_a_sigterm_is_the_interrupt_not_a_failed_job():
    STOPPED_BY.append(signal.SIGTERM)
    try:
        with pytest.raises(KeyboardInterrupt), job_errors("spark-export"):
            raise _Py4JError("Answer from Java side is empty")
    finally:
        STOPPED_BY.clear()
