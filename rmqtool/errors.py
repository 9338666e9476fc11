"""Exceptions the CLI turns into one line on stderr: bad input (exit 2) and not found (exit 1)."""


class RmqError(Exception):
    """A request rmqtool refuses: a wrong path, a malformed msgId, a locked store, ..."""

    exit_code = 2


class NotFound(RmqError):
    """The request was sound and its answer is: nothing (a query found no message)."""

    exit_code = 1


class NoSuchQueue(RmqError):
    """A topic/queue the store holds no consume queue for (bad input to decode; a query answers NotFound)."""
