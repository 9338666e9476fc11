"""An error that reaches the CLI after a stop signal is the interrupt, not a failure: a call the signal cut (a socket
read, a system call, a py4j answer left empty) fails after it, and the command exits with the signal's code
(130/143) saying it was interrupted; before, only the Spark commands did (spark/session.job_errors, which turns
such a failure into the interrupt where the job's own clean-up can report it), any other command exited 1 or 2."""

from __future__ import annotations

import errno
import signal

import pytest
from cli_helpers import CONF, FIXTURE

from rmqtool.cli.app import main
from rmqtool.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_TERMINATED, RmqError
from rmqtool.files.signals import STOPPED_BY

STOPS = {signal.SIGINT: EXIT_INTERRUPTED, signal.SIGTERM: EXIT_TERMINATED}


@pytest.fixture(autouse=True)
def _no_stop_left():
    """The record of stop signals is the process's: a test's stop must not reach the next test."""
    yield
    STOPPED_BY.clear()


def _info_failing(monkeypatch, error: BaseException, stop: signal.Signals | None) -> None:
    def failing(*_a, **_k):
        if stop is not None:
            STOPPED_BY.append(stop)
        raise error

    monkeypatch.setattr("rmqtool.ops.info.store_info", failing)


def _run(capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as ended:
        main(["info", str(FIXTURE), "--config", str(CONF), "--json"])
    return ended.value.code, capsys.readouterr().err


@pytest.mark.parametrize("stop", list(STOPS), ids=["SIGINT", "SIGTERM"])
def test_an_error_after_a_stop_signal_exits_with_the_signals_code_as_interrupted(monkeypatch, capsys, stop):
    _info_failing(monkeypatch, RmqError("spark-export: the Spark job failed: Answer from Java side is empty"), stop)
    code, err = _run(capsys)
    assert code == STOPS[stop]
    said = "terminated" if stop == signal.SIGTERM else "interrupted"  # SIGTERM said "interrupted" too
    assert err == f"rmqtool: {said}: spark-export: the Spark job failed: Answer from Java side is empty\n"


def test_a_system_error_after_a_sigterm_exits_143_as_terminated_not_interrupted(monkeypatch, capsys):
    _info_failing(monkeypatch, OSError(errno.EINTR, "Interrupted system call"), signal.SIGTERM)
    code, err = _run(capsys)
    assert (code, err) == (EXIT_TERMINATED, "rmqtool: terminated: Interrupted system call\n")


def test_the_same_errors_without_a_signal_are_errors_with_their_own_codes(monkeypatch, capsys):
    _info_failing(monkeypatch, RmqError("spark-export: the Spark job failed: Answer from Java side is empty"), None)
    code, err = _run(capsys)
    assert (code, err) == (RmqError.exit_code, "rmqtool: error: spark-export: the Spark job failed: Answer from "
                                                "Java side is empty\n")
    _info_failing(monkeypatch, OSError(errno.EACCES, "Permission denied"), None)
    assert _run(capsys) == (EXIT_BAD_INPUT, "rmqtool: error: Permission denied\n")
