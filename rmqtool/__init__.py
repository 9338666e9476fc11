"""rmqtool: read, query, verify and write Apache RocketMQ 4.9.x message stores.

Run as the `rmqtool` console script (or `python -m rmqtool`), a SIGINT or SIGTERM while the modules load ends the
process at once with one line and the shell's exit code, 128 + the signal (errors.EXIT_INTERRUPTED, 130, and
EXIT_TERMINATED, 143): nothing has been opened yet, and Python's own answer to Ctrl-C would be a KeyboardInterrupt
traceback. The handlers go in first, before any other import; `cli.app.main` replaces them when the command starts.
What comes before this line (the interpreter's start, site, the script's own `import re`) is not ours to guard."""

import _signal  # the C module: `signal` would load enum first
import os
import sys


def _stopped_while_loading(signum, frame) -> None:
    os.write(2, b"rmqtool: terminated\n" if signum == _signal.SIGTERM else b"rmqtool: interrupted\n")
    os._exit(128 + signum)


def _run_as_the_script() -> bool:
    """The console script, or `python [options] -m rmqtool` (whose sys.argv[0] is "-m" while this loads)."""
    if os.path.basename(sys.argv[0]) == "rmqtool":
        return True
    args = getattr(sys, "orig_argv", [])
    return "-m" in args and args[args.index("-m") + 1:args.index("-m") + 2] == ["rmqtool"]


if _run_as_the_script():
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:  # not when started with Ctrl-C ignored
        _signal.signal(_signal.SIGINT, _stopped_while_loading)
    if _signal.getsignal(_signal.SIGTERM) == _signal.SIG_DFL:
        _signal.signal(_signal.SIGTERM, _stopped_while_loading)

__version__ = "0.1.0"
