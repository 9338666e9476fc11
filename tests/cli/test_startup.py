"""A short command pays only for what it uses: one query per process is how scripts call rmqtool."""

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from cli_helpers import CONF, FIXTURE, command_probe, run

from rmqtool.structures.jit import COMPILING_NOTE


def _rich(got: dict) -> list[str]:
    return [m for m in got["modules"] if m.startswith("rich.")]


def test_a_json_query_imports_no_rich_and_builds_only_its_command():
    got = command_probe("query", FIXTURE, "--phy-offset", "0", "--json")
    assert got["code"] == 0
    assert got["built"] == [["query"]]
    assert not [m for m in _rich(got) if m in ("rich.console", "rich.table", "rich.text", "rich.markdown")]


def test_a_card_still_draws_with_rich():
    got = command_probe("query", FIXTURE, "--phy-offset", "0")
    assert got["code"] == 0 and "rich.console" in _rich(got) and "rich.table" in _rich(got)


def test_a_card_imports_numpy_to_show_two_times():
    """A card's times are two values: written without numpy, whose import was half a card's start."""
    got = command_probe("query", FIXTURE, "--phy-offset", "0")
    assert got["code"] == 0 and "numpy" not in got["modules"]


def test_short_commands_on_a_small_store_load_no_numba():
    """numba's import and context cost a process about a second of CPU, more than a small store's walk as Python;
    decode and export of a small store still compiled their text kernels."""
    for args in (("info", FIXTURE, "--json"), ("verify", FIXTURE, "--config", CONF, "--json"),
                 ("consumers", FIXTURE, "--json"), ("decode", "commitlog", FIXTURE, "--config", CONF, "--json"),
                 ("decode", "commitlog", FIXTURE, "--config", CONF, "--jsonl"), ("export", FIXTURE, "--config", CONF),
                 ("decode", "index", FIXTURE, "--json"),
                 ("query", FIXTURE, "--topic", "OrderTopic", "--key", "order-1", "--json")):
        got = command_probe(*args)
        assert got["code"] == 0
        assert not [m for m in got["modules"] if m.split(".")[0] in ("numba", "llvmlite")], args


def test_a_command_without_spark_loads_no_pandas():
    """pyarrow imports pandas on its first conversion when it is installed (0.6 s of a decode's start); only the
    Spark commands, whose driver hands pandas to pyspark, may load it."""
    for args in (("decode", "commitlog", FIXTURE, "--config", CONF, "--count", "3"),
                 ("export", FIXTURE, "--config", CONF), ("info", FIXTURE, "--json"),
                 ("report", FIXTURE, "--out", os.devnull)):
        got = command_probe(*args)
        assert got["code"] == 0, args
        assert got["pandasHidden"] and not [m for m in got["modules"] if m.split(".")[0] == "pandas"], args
    for args in (("spark-export", "--help"), ("bench", "spark-load", "--help")):
        got = command_probe(*args)
        assert got["code"] == 0 and not got["pandasHidden"], args


_COMPILE_TWO = """
import numpy as np
from rmqtool.structures import jit
from rmqtool.structures.commitlog import kernels
jit.INTERPRETED_WORK = 0
buf = np.frombuffer(b"TopicATopicBTopicA", dtype=np.uint8)
starts, lengths = np.array([0, 6, 12]), np.array([6, 6, 6])
first, ids = np.empty(3, dtype=np.int64), np.empty(3, dtype=np.int64)
groups = kernels.group_equal(buf, starts, lengths, first, ids)
print(groups, ids.tolist(), kernels.strings_match(buf, starts, lengths, ids))
"""


def _compile_two(cache: Path, terminal: bool) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a process compiling two kernels with `cache` as numba's cache, its stderr
    a terminal or a pipe."""
    main, sub = pty.openpty() if terminal else (None, subprocess.PIPE)
    proc = subprocess.Popen([sys.executable, "-c", _COMPILE_TWO], stdout=subprocess.PIPE, stderr=sub, text=True,
                            env={**os.environ, "NUMBA_CACHE_DIR": str(cache)})
    out, err = proc.communicate(timeout=600)
    if terminal:
        os.close(sub)
        err = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the terminal's other side closed: all was read
                break
            if not chunk:
                break
            err += chunk
        os.close(main)
        err = err.decode().replace("\r\n", "\n")
    return proc.returncode, out, err


def test_the_first_compile_says_so_once_on_a_terminal_and_a_cached_one_says_nothing(tmp_path):
    """A fresh install compiles its kernels once, for seconds: a silent first run looked hung."""
    first = _compile_two(tmp_path, terminal=True)
    assert first == (0, "2 [0, 1, 0] True\n", COMPILING_NOTE)
    assert _compile_two(tmp_path, terminal=True) == (0, first[1], "")


def test_a_first_compile_with_stderr_not_a_terminal_says_nothing(tmp_path):
    """A script's stderr (a pipe, a log) got the compiling note among the command's own lines on a fresh install."""
    assert _compile_two(tmp_path, terminal=False) == (0, "2 [0, 1, 0] True\n", "")


def test_help_and_an_unknown_command_see_every_command():
    assert len(command_probe("--help")["built"][0]) >= 12
    out = run("quer", FIXTURE)
    assert out.returncode == 2 and "Did you mean 'query'?" in out.stderr


def test_a_group_built_alone_still_lists_its_subcommands():
    out = run("decode", "--help")
    assert out.returncode == 0
    for sub in ("commitlog", "consumequeue", "index", "checkpoint"):
        assert sub in out.stdout


def test_bench_start_times_each_short_command_in_fresh_processes():
    out = run("bench", "start", FIXTURE, "--runs", "2", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["mode"] == "start" and doc["runs"] == 2
    timed = {"version", "queryJson", "queryCard", "infoJson", "consumersJson", "decodeJson", "verifyJson",
             "verifyFirstRun"}
    assert set(doc) == {"mode", "runs", "cpuRatios", *timed}
    for name in timed:
        times = doc[name]
        assert 0 < times["wallMsMin"] <= times["wallMsMedian"] and times["cpuMsMedian"] > 0
    assert set(doc["cpuRatios"]) == {"queryJsonOverVersion", "queryCardOverVersion", "infoJsonOverVersion",
                                     "consumersJsonOverVersion", "decodeJsonOverVersion", "verifyFirstRunOverWarm"}
    assert doc["cpuRatios"]["infoJsonOverVersion"] == round(doc["infoJson"]["cpuMsMedian"]
                                                            / doc["version"]["cpuMsMedian"], 2)


def test_bench_start_refuses_what_is_not_a_store(tmp_path):
    (tmp_path / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    out = run("bench", "start", tmp_path / "passwd", "--runs", "1")
    assert out.returncode == 2 and "not a" in out.stderr and "Traceback" not in out.stderr
