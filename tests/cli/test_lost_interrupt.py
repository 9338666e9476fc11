"""A SIGTERM that lands while Python runs a weakref callback (or a `__del__`) cannot be raised there: Python printed
"Exception ignored ... Traceback ... KeyboardInterrupt" and went on, the interrupt lost (the interruption campaign's
`[export-term]` saw the traceback). It now comes again on the main thread, nothing printed."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import os, signal, sys, time, weakref
from rmqtool.cli import app
signal.signal(signal.SIGTERM, app._ctrl_c)
class Held: pass
held = Held()
def gone(ref):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.01)  # the signal's handler runs here, inside the callback
ref = weakref.ref(held, gone)
try:
    del held
    for _ in range(500):
        time.sleep(0.01)
    print("lost")
except KeyboardInterrupt:
    print("raised again")
"""


def test_a_sigterm_landing_in_a_weakref_callback_is_raised_again_not_printed_as_ignored():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert (done.stdout, done.stderr) == ("raised again\n", "")
