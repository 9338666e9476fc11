"""`consumers` and `info` on a narrow terminal keep the columns an operator came for: long group and topic names
shrink (cut with `…`) instead, no cell wraps, and a pipe gets every cell whole."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import RMQTOOL, on_a_terminal, read_terminal, run, table_rows, writable_copy
from rich.cells import cell_len

LONG_TOPIC = "ShipmentNotificationsFromWarehouseEurope"
LONG_GROUP = "warehouse-dispatch-service-eu"
OFFSETS = ('{"offsetTable":{"OrderTopic@billing":{0:250,1:66},"PaymentTopic@audit":{0:135},'
           f'"{LONG_TOPIC}@{LONG_GROUP}":{{0:0}}}}}}')
NAMES = [LONG_TOPIC, LONG_GROUP, "AuditLogTopic", "OrderTopic", "PaymentTopic", "billing", "audit"]


@pytest.fixture(scope="module")
def store(golden_basic: Path, tmp_path_factory) -> Path:
    """The broker's store with a long-named topic appended and three groups' committed offsets."""
    dst = writable_copy(golden_basic / "store", tmp_path_factory.mktemp("narrow") / "store")
    out = run("append", dst, "--config", golden_basic / "broker.conf", "--topic", LONG_TOPIC, "--body", "hi")
    assert out.returncode == 0, out.stderr
    (dst / "config" / "consumerOffset.json").write_text(OFFSETS)
    return dst


def scan_bar_frames(args: list, columns: int) -> list[str]:
    """What a command drew on stderr, a terminal `columns` wide (TERM=xterm: rich draws its bars), split into the
    frames of its live display (each starts with a carriage return and an erase of the line); stdout is a file."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import tempfile
    import termios

    main, sub = pty.openpty()
    fcntl.ioctl(sub, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([RMQTOOL, *map(str, args)], stdout=out, stderr=sub,
                                env={**env, "PAGER": "", "TERM": "xterm", "NO_COLOR": "1"})
        os.close(sub)
        seen = read_terminal(main).decode("utf-8", "replace")
        assert proc.wait() == 0, seen
    frames = re.split(r"\r\x1b\[2K(?:\x1b\[1A\x1b\[2K)*", seen.replace("\r\n", "\n"))
    return [re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", f) for f in frames if f.strip(" \x1b[?25lh")]


def section(stdout: str, title: str) -> tuple[list[str], list[list[str]]]:
    """The table under the line `title`, up to the blank line that ends it."""
    text = stdout.split(title + "\n", 1)[1].split("\n\n", 1)[0]
    return table_rows(text)


def assert_nothing_wraps(stdout: str, columns: int, times: tuple[str, ...] = ()) -> None:
    """Every line fits `columns`, every row starts with a name of the store (a wrapped row would go on with a
    name's tail or blank), and a cut cell is a name or one of `times` cut with `…`."""
    lines = stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= columns
    for title, rule in zip(lines, lines[2:], strict=False):
        if rule.startswith("─"):
            _, rows = section(stdout, title)
            assert rows and all(any(n.startswith(r[0].rstrip("…")) for n in NAMES) for r in rows), rows
    cells = [c.strip() for line in lines for c in line.split("  ") if c.strip()]
    for cell in (c for c in cells if c.endswith("…")):
        assert any(w.startswith(cell[:-1]) for w in [*NAMES, *times]), cell


def test_consumers_at_80_columns_drops_no_lag_column_for_a_26_character_topic(store):
    out = on_a_terminal("consumers", store, columns=80)
    assert out.returncode == 0, out.stderr
    header, rows = section(out.stdout, "queues, most behind first")
    assert header == ["group", "topic", "queue", "min", "max", "lag", "lag time", "state"]
    assert rows[:2] == [["billing", "OrderTopic", "0", "0", "290", "40", "284 ms", "ok"],
                        ["billing", "OrderTopic", "1", "0", "66", "0", "0 ms", "ok"]]
    assert rows[4] == ["warehouse-dispatc…", "ShipmentNotifica…", "0", "0", "1", "1", "0 ms", "ok"]
    groups, _ = section(out.stdout, "consumer groups, most behind first")
    assert groups == ["group", "topics", "queues", "lag", "lag time", "retry", "flagged"]
    assert ("columns left out at this width: DLQ (--json has every field)\n"
            "columns left out at this width: committed (--json has every field)\n") in out.stderr
    assert_nothing_wraps(out.stdout, 80)


def test_consumers_at_60_columns_keeps_queue_lag_lag_time_and_state(store):
    out = on_a_terminal("consumers", store, columns=60)
    header, rows = section(out.stdout, "queues, most behind first")
    assert header == ["group", "topic", "queue", "lag", "lag time", "state"]
    assert rows[0] == ["billing", "OrderTopic", "0", "40", "284 ms", "ok"]
    assert rows[4] == ["warehouse-di…", "ShipmentNot…", "0", "1", "0 ms", "ok"]
    groups, summary = section(out.stdout, "consumer groups, most behind first")
    assert groups == ["group", "lag", "lag time", "retry", "flagged"]
    assert summary[1] == [LONG_GROUP, "1", "0 ms", "0", "-"]
    assert "columns left out at this width: min, max, committed (--json has every field)" in out.stderr
    assert_nothing_wraps(out.stdout, 60)


@pytest.mark.parametrize("where", ["terminal", "pipe"])
def test_consumers_at_200_columns_or_in_a_pipe_shows_every_column_whole(store, where):
    out = on_a_terminal("consumers", store, columns=200) if where == "terminal" else run("consumers", store)
    header, rows = section(out.stdout, "queues, most behind first")
    assert header == ["group", "topic", "queue", "committed", "min", "max", "lag", "lag time", "state"]
    assert rows[4] == [LONG_GROUP, LONG_TOPIC, "0", "0", "0", "1", "1", "0 ms", "ok"]
    assert "…" not in out.stdout and "columns left out" not in out.stderr


def test_consumers_says_the_messages_of_no_offset_queues_are_not_in_the_lag(store):
    out = run("consumers", store)
    assert out.returncode == 0, out.stderr
    assert ("billing: 144 messages in 2 queues without a committed offset (no-offset) are not in its lag\n"
            "audit: 365 messages in 3 queues without a committed offset (no-offset) are not in its lag\n") in out.stderr
    assert LONG_GROUP + ":" not in out.stderr
    doc = json.loads(run("consumers", store, "--json").stdout)
    assert [(g["group"], g["lag"], g["noOffsetQueues"], g["noOffsetMessages"]) for g in doc["groups"]] == [
        ("billing", 40, 2, 144), (LONG_GROUP, 1, 0, 0), ("audit", 0, 3, 365)]


def _times(store: Path) -> dict[str, tuple[str, str]]:
    from rmqtool.text import iso_time

    doc = json.loads(run("info", store, "--json").stdout)
    return {t["topic"]: (iso_time(t["firstStoreTimestamp"]), iso_time(t["lastStoreTimestamp"]))
            for t in doc["consumeQueues"]["topics"]}


def test_info_topic_table_at_80_columns_keeps_the_times_whole_and_shrinks_the_topic(store):
    out = on_a_terminal("info", store, columns=80)
    assert out.returncode == 0, out.stderr
    times = _times(store)
    header, rows = section(out.stdout, "topics (as their consumers see them)")
    assert header == ["topic", "msgs", "first stored", "last stored"]
    assert rows[0] == ["AuditLogTopic", "500", *times["AuditLogTopic"]]
    assert rows[3] == ["ShipmentNotifications…", "1", *times[LONG_TOPIC]]
    queues, qrows = section(out.stdout, "consume queues")
    assert queues == ["topic", "queue", "min offset", "max offset", "messages"]
    assert qrows[-1] == ["ShipmentNotificationsFromWarehouseEuro…", "0", "0", "1", "1"]
    assert "columns left out at this width: queues, bytes (--json has every field)" in out.stderr
    assert_nothing_wraps(out.stdout[out.stdout.index("topics (as their"):out.stdout.index("\ndisk use")], 80)


def test_info_at_60_columns_cuts_no_topic_name_that_fits_and_leaves_out_last_stored(store):
    out = on_a_terminal("info", store, columns=60)
    times = _times(store)
    header, rows = section(out.stdout, "topics (as their consumers see them)")
    assert header == ["topic", "msgs", "first stored"]
    assert rows == [["AuditLogTopic", "500", times["AuditLogTopic"][0]], ["OrderTopic", "500", times["OrderTopic"][0]],
                    ["PaymentTopic", "500", times["PaymentTopic"][0]],
                    ["ShipmentNotificationsFromWa…", "1", times[LONG_TOPIC][0]]]
    assert "columns left out at this width: queues, bytes, last stored (--json has every field)" in out.stderr
    _, shares = section(out.stdout, "commitlog by topic (record bytes, from queue entries)")
    assert [r[0] for r in shares][:4] == ["PaymentTopic", "OrderTopic", "AuditLogTopic",
                                          "ShipmentNotificationsFromWarehous…"]
    assert_nothing_wraps(out.stdout[out.stdout.index("topics (as their"):out.stdout.index("\ndisk use")], 60)
    under_the_card = out.stdout[out.stdout.index("timeline: "):]  # the chart, the tables and their notes
    assert max(cell_len(line) for line in under_the_card.splitlines()) <= 60


def test_info_scan_bar_at_60_columns_stays_on_one_line(golden_basic):
    """The bar drawn on stderr while `info` scans the first and last segment: every frame of it one line of at
    most 60 cells (a label cut with an ellipsis, the columns after the bar left out first), never wrapped."""
    frames = scan_bar_frames(["info", golden_basic / "store", "--config", golden_basic / "broker.conf"], 60)
    label = [f for f in frames if f.startswith("info ")]
    assert label and all("━" in f or "0.0/" in f for f in label), frames
    assert max(cell_len(f) for f in frames) <= 60
    assert all(len([line for line in f.split("\n") if line.strip()]) == 1 for f in frames), frames  # no wrap


def test_info_in_a_pipe_writes_the_topic_table_whole(store):
    out = run("info", store)
    header, rows = section(out.stdout, "topics (as their consumers see them)")
    assert header == ["topic", "queues", "msgs", "bytes", "first stored", "last stored"]
    assert rows[3][:4] == [LONG_TOPIC, "1", "1", "174"] and "…" not in out.stdout
