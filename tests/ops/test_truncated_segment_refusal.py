"""A truncated commitlog segment asked for `--config` when `--config` was given: recovery's refusal says the
segment is shorter (or longer) than the configured size and that the file itself is damaged when a broker.conf
set the size, and asks for the broker.conf only when none was given."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import CONF, fixture_copy, run
from damage import SEG, corrupt

from rmqtool.structures.commitlog.geometry import size_refusal_line

MIDDLE = f"{SEG:020d}"
ASK = "(pass the store's broker.conf with --config)"


@pytest.fixture
def truncated(tmp_path: Path) -> Path:
    store = fixture_copy(tmp_path)
    corrupt(store, f"commitlog/{MIDDLE}", "truncate", 40000)
    return store


def said(store: Path) -> str:
    return (f"{store / 'commitlog' / MIDDLE}: segment is 40000 bytes, 25536 bytes shorter than "
            "mappedFileSizeCommitLog=65536 of the given config: the file itself is damaged (truncated) and the broker "
            "refuses to start on it")


def test_a_truncated_segment_with_config_given_is_named_damaged_by_doctor_and_recover(truncated):
    doctor = run("doctor", truncated, "--config", CONF)
    assert doctor.returncode == 2
    assert f"the broker's recovery refuses this store: {said(truncated)}\n" in doctor.stdout
    dry = run("recover", truncated, "--config", CONF, "--dry-run")
    assert dry.returncode == 2
    assert (dry.stdout + dry.stderr).splitlines() == [f"refused, nothing changed: {said(truncated)}"]
    assert ASK not in doctor.stdout + doctor.stderr + dry.stdout + dry.stderr


def test_a_truncated_segment_without_config_asks_for_the_broker_conf(truncated):
    dry = run("recover", truncated, "--dry-run")
    assert dry.returncode == 2
    assert (dry.stdout + dry.stderr).splitlines() == [
        f"refused, nothing changed: {truncated / 'commitlog' / MIDDLE}: segment is 40000 bytes, expected 65536 "
        f"(mappedFileSizeCommitLog=65536): the broker refuses to start {ASK}"]


def test_the_refusal_names_a_longer_segment_and_a_config_that_does_not_set_the_size():
    assert size_refusal_line("s", 65600, SEG, frozenset({"mappedFileSizeCommitLog"})) == (
        "s: segment is 65600 bytes, 64 bytes longer than mappedFileSizeCommitLog=65536 of the given config: the file "
        "itself is damaged (bytes written past its size) and the broker refuses to start on it")
    assert size_refusal_line("s", 40000, SEG, frozenset({"maxIndexNum"})) == (
        "s: segment is 40000 bytes, 25536 bytes shorter than the store's other segments (65536 bytes; the given config "
        "does not set mappedFileSizeCommitLog): the file itself is damaged (truncated) and the broker refuses to start "
        "on it")
