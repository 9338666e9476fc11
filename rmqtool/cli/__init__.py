"""The typer command line: parse, call one library function, render.

Run as the `rmqtool` console script (or `python -m rmqtool`), Ctrl-C while the modules load ends the process at
once with exit 130 and one line: nothing has been opened yet, and Python's own answer would be a KeyboardInterrupt
traceback.
`app.main` hands SIGINT back to Python (a KeyboardInterrupt the command cleans up after) when it starts."""

import os
import signal
import sys


def _interrupted_while_loading(signum, frame) -> None:
    os.write(2, b"rmqtool: interrupted\n")
    os._exit(130)  # EXIT_INTERRUPTED (rmqtool.errors is not loaded yet)


_SCRIPT = os.path.basename(sys.argv[0]) == "rmqtool" or sys.argv[0].endswith(os.path.join("rmqtool", "__main__.py"))
if _SCRIPT and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_while_loading)
