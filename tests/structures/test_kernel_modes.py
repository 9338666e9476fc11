"""A kernel runs as Python in a process with little work and compiled in one with much (structures/jit.py): the
two must answer alike, byte for byte, or a small store and a big one would be read by two codecs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import FIXTURE, RUN_GUARD_S

import rmqtool

_AS = {"python": 10**15, "compiled": 0}  # jit.INTERPRETED_WORK: everything as Python / everything compiled
_RUN = ("import sys; import rmqtool.structures.jit as jit; jit.INTERPRETED_WORK = int(sys.argv[1]); "
        "from rmqtool.cli.app import main; main(sys.argv[2:])")


def _run(mode: str, *args) -> str:
    out = subprocess.run([sys.executable, "-c", _RUN, str(_AS[mode]), *map(str, args)], capture_output=True,
                         text=True, timeout=RUN_GUARD_S)
    assert out.returncode in (0, 1), out.stderr
    return out.stdout


@pytest.mark.parametrize("command", [
    ("verify", "{store}", "--json"),
    ("decode", "commitlog", "{store}", "--jsonl"),
    ("decode", "index", "{store}", "--json"),
    ("query", "{store}", "--topic", "OrderTopic", "--key", "order-1", "--json"),
    ("export", "{store}", "--topic", "PaymentTopic", "--tag", "🚀rocket"),
], ids=["verify", "decode-commitlog", "decode-index", "query-key", "export-tag"])
def test_python_and_compiled_kernels_read_the_golden_store_alike(golden_basic, command):
    args = [a.format(store=golden_basic / "store") for a in command] + ["--config", golden_basic / "broker.conf"]
    python, compiled = _run("python", *args), _run("compiled", *args)
    assert python and python == compiled


def test_every_kernel_goes_through_jit_not_a_bare_njit():
    """A kernel merged in with a bare `@njit` called a helper that jit.py keeps as plain Python: numba refused it
    ("Untyped global name 'bytes_equal'") the first time a big log compiled it."""
    package = Path(rmqtool.__file__).parent
    bare = [str(p.relative_to(package)) for p in package.rglob("*.py")
            if p.name != "jit.py" and re.search(r"^\s*(from numba import .*njit|@njit|@numba\.njit)", p.read_text(),
                                                re.M)]
    assert bare == []


_FORESEEN = """
import sys
import rmqtool.structures.jit as jit
from rmqtool.engine.reader import open_reader
jit.INTERPRETED_WORK = int(sys.argv[2])
records = sum(len(c.batch) for c in open_reader(sys.argv[1]).scan() if c.batch is not None)
print(records, jit.interpreted_work(), "numba" in sys.modules)
"""


@pytest.mark.parametrize(("budget", "as_python"), [(10**9, True), (1000, False)], ids=["small-log", "big-log"])
def test_a_scan_of_a_log_bigger_than_the_python_budget_compiles_before_its_first_batch(budget, as_python):
    """A big log's first batches ran as Python side by side until the budget was spent (2.7 s of a 1 M-message
    export's 5.6); the scan now foresees its work and compiles at once. The fixture's walk is ~10,000 units."""
    out = subprocess.run([sys.executable, "-c", _FORESEEN, str(FIXTURE), str(budget)], capture_output=True,
                         text=True, timeout=RUN_GUARD_S)
    assert out.returncode == 0, out.stderr
    records, interpreted, numba = out.stdout.split()
    assert records == "420"
    assert (int(interpreted) > 0, numba) == (as_python, str(not as_python))
