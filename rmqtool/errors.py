"""The one exception type for bad user input; the CLI turns it into one line and exit code 2."""


class RmqError(Exception):
    """A request rmqtool refuses: a wrong path, a malformed msgId, a locked store, ..."""
