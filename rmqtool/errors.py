"""What every command's exit code means, and the exceptions the CLI turns into one line on stderr."""

import sys

from rmqtool.text import printable

EXIT_OK = 0  # done; for a key search, also when it found nothing (an empty list, the reason on stderr)
EXIT_PROBLEM = 1  # the command ran and found damage: corruption, verify findings, corrupt regions skipped
EXIT_BAD_INPUT = 2  # refused before doing anything: bad arguments, not a store, a contradicting config, locked
EXIT_NOT_FOUND = 3  # what was asked for does not exist: a msgId, an offset, a queue, a topic; the reason says which
EXIT_INTERRUPTED = 130  # SIGINT (Ctrl-C) stopped the command, after cleaning up: 128 + the signal, as a shell says
EXIT_TERMINATED = 143  # SIGTERM stopped the command, after cleaning up


class RmqError(Exception):
    """A request rmqtool refuses: a wrong path, a malformed msgId, a locked store, ..."""

    exit_code = EXIT_BAD_INPUT


class NotFound(RmqError):
    """The request was sound and names something the store does not hold (a msgId, an offset)."""

    exit_code = EXIT_NOT_FOUND


class Interrupted(RmqError):
    """SIGINT or SIGTERM stopped a command, which cleaned up after itself: the message says what is left. The CLI
    exits with the code of the signal that came (EXIT_INTERRUPTED or EXIT_TERMINATED)."""

    exit_code = EXIT_INTERRUPTED


class NoSuchQueue(NotFound):
    """A topic/queue the store holds no consume queue for."""


_WARNED: set[str] = set()


def forget_warnings() -> None:
    """A new command starts: the warnings already given may be given again."""
    _WARNED.clear()


def warn(text: str) -> None:
    """One warning line on stderr, for the layers below the CLI (the text made safe for a terminal); a warning
    given once is not given again by the same command (a store's settings read by two of its steps)."""

    if text in _WARNED:
        return
    _WARNED.add(text)
    print(f"rmqtool: warning: {printable(text)}", file=sys.stderr)
