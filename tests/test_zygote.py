"""The suite's runs in the warm zygote (tests/zygote.py) give what the console script gives: the same exit code,
stdout and stderr, for output, refusals, stdin and an environment of the test's own."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from cli_helpers import CONF, FIXTURE, RMQTOOL, RUN_GUARD_S, run
from damage import damaged_stores

from rmqtool.ops.repair import TRACE_ENV


def _console_script(*args: object, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([RMQTOOL, *map(str, args)], capture_output=True, text=True, input=stdin,
                          timeout=RUN_GUARD_S, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("args", [
    ("verify", FIXTURE, "--config", CONF),
    ("info", FIXTURE, "--json"),
    ("decode", "commitlog", FIXTURE, "--config", CONF, "--count", "3", "--jsonl"),
    ("decode", "msgid", "zz"),
    ("query", FIXTURE, "--phy-offset", "0"),
    ("nosuchcommand",),
], ids=["verify", "info-json", "decode-jsonl", "bad-msgid", "query-card", "unknown-command"])
def test_a_zygote_run_answers_as_the_console_script(args):
    got, want = run(*args), _console_script(*args)
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr)


def test_a_zygote_run_reads_its_stdin_and_the_tests_environment(tmp_path):
    """stdin reaches the child, and so does an environment the test adds (the repair's trace hook names the same
    steps as the console script's)."""
    rows = '{"topic": "T", "bodyText": "x"}\n'
    for store in ("zygote", "script"):
        args = ("append", tmp_path / store, "--batch", "-", "--json")
        got = run(*args, stdin=rows) if store == "zygote" else _console_script(*args, stdin=rows)
        assert got.returncode == 0, got.stderr
    bodies = [[json.loads(line)["body"] for line in run("decode", "commitlog", tmp_path / s, "--jsonl",
                                                             "--body", "text").stdout.splitlines()]
              for s in ("zygote", "script")]
    assert bodies == [["x"], ["x"]]
    steps = []
    for name, runner in (("z", run), ("s", _console_script)):
        store = damaged_stores(tmp_path / name, ["crc-mid"])["crc-mid"]
        trace = tmp_path / f"{name}.trace"
        done = runner("doctor", store, "--config", CONF, "--apply", env={TRACE_ENV: str(trace)})
        assert done.returncode == 0, (name, done.stderr)
        steps.append(re.sub(r"lost/\d{8}T\d{6}Z", "lost/TIME", trace.read_text()).splitlines())
    assert steps[0] == steps[1] and "committed" in steps[0]
