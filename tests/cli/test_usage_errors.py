"""Asking for nothing or for a command that does not exist: help or one line that says what to type, exit 2."""

from __future__ import annotations

import pytest
from cli_helpers import run


@pytest.mark.parametrize("args", [[], ["decode"], ["ha"], ["bench"]], ids=lambda a: " ".join(a) or "rmqtool")
def test_a_bare_command_prints_an_empty_error_line_after_its_help(args):
    out = run(*args)
    assert out.returncode == 2
    assert "Usage: rmqtool" in out.stdout + out.stderr
    assert "error" not in out.stderr and "(see '" not in out.stderr


@pytest.mark.parametrize(("args", "meant"), [(["decod"], "decode"), (["decode", "comitlog"], "commitlog"),
                                             (["bench", "scna"], "scan")])
def test_a_mistyped_command_suggests_the_right_one_twice(args, meant):
    out = run(*args)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("Did you mean") == 1 and f"'{meant}'" in out.stderr
    assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith("rmqtool: error: No such command")
