"""Numbers past what a store can hold: refused where they are parsed, one line naming the option and the range,
exit 2, no traceback and no file written."""

from __future__ import annotations

import pytest
from cli_helpers import CONF, FIXTURE, ROOT, run

ROWS = ROOT / "fixtures" / "rows.jsonl"
LONG = "a signed 64-bit integer: -9223372036854775808..9223372036854775807"
SEGMENT = FIXTURE / "commitlog" / f"{0:020d}"


@pytest.mark.parametrize("command", ["import", "spark-load"])
@pytest.mark.parametrize("stamp", ["9223372036854775808", "-9223372036854775809"])
def test_a_store_timestamp_past_a_long_is_one_line_not_an_overflow_traceback(tmp_path, command, stamp):
    store = tmp_path / "store"
    args = [store, ROWS] if command == "import" else [ROWS, "--store", store]
    out = run(command, *args, "--config", CONF, "--store-timestamp", stamp)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith(f"rmqtool: error: --store-timestamp {stamp} is ") and "Traceback" not in out.stderr
    assert len(out.stderr.splitlines()) == 1 and not store.exists()


def test_load_options_past_a_long_are_refused_for_a_library_caller_too():
    """The CLI refuses such a time where it parses it (cli/times); the load's options hold the record's own
    bound for callers that build them (salvage, the Spark tasks)."""
    from rmqtool.engine.config import StoreConfig
    from rmqtool.errors import RmqError
    from rmqtool.load.records import LoadOptions

    with pytest.raises(RmqError, match=r"--store-timestamp 9223372036854775808 is out of range"):
        LoadOptions(cfg=StoreConfig(), store_timestamp=2**63)


FROM_0, FROM_1 = "0..9223372036854775807", "1..9223372036854775807"


@pytest.mark.parametrize(("args", "option", "help_of", "the_range"), [
    (["query", FIXTURE, "--phy-offset", "9223372036854775808"], "--phy-offset", "query", FROM_0),
    (["query", FIXTURE, "--topic", "OrderTopic", "--queue-offset", "0", "--count", "99999999999999999999"],
     "--count", "query", FROM_1),
    (["query", FIXTURE, "--topic", "OrderTopic", "--queue", "-9223372036854775809", "--queue-offset", "0"],
     "--queue", "query", FROM_0),
    (["decode", "commitlog", SEGMENT, "--count", "9223372036854775808"], "--count", "decode commitlog", FROM_0),
    (["inspect", FIXTURE, "--phy-offset", "9223372036854775808"], "--phy-offset", "inspect", FROM_0),
    (["append", "{tmp}", "--topic", "T", "--body", "x", "--flag", "9223372036854775808"], "--flag", "append", LONG),
], ids=lambda v: v if isinstance(v, str) and not v.endswith("807") else None)
def test_an_integer_option_past_a_long_is_refused_naming_the_option_and_its_range(tmp_path, args, option, help_of,
                                                                                   the_range):
    """An option with bounds of its own names them (within a long); one without names a long's range."""
    store = tmp_path / "store"
    out = run(*(store if a == "{tmp}" else a for a in args))
    value = args[args.index(option) + 1]
    assert out.returncode == 2 and out.stdout == "" and not store.exists()
    assert out.stderr == (f"rmqtool: error: Invalid value for '{option}': {value} is out of range ({the_range}). "
                          f"(see 'rmqtool {help_of} --help')\n")


@pytest.mark.parametrize("count", ["99999999999999999999", "9223372036854775808", "0", "-5"])
def test_a_count_refusal_quotes_the_negative_long_range_for_an_option_that_starts_at_1(count):
    """Issue 42: `--count 99999999999999999999` was refused with -9223372036854775808..9223372036854775807, a range
    `--count` never takes; every refusal of it now states 1..9223372036854775807."""
    out = run("query", FIXTURE, "--topic", "OrderTopic", "--queue", "0", "--queue-offset", "0", "--count", count)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (f"rmqtool: error: Invalid value for '--count': {count} is out of range ({FROM_1}). "
                          "(see 'rmqtool query --help')\n")


def test_an_option_bounded_on_both_sides_names_both_bounds():
    out = run("ha", "serve", FIXTURE, "--port", "70000")
    assert out.returncode == 2
    assert out.stderr == ("rmqtool: error: Invalid value for '--port': 70000 is out of range (0..65535). "
                          "(see 'rmqtool ha serve --help')\n")


@pytest.mark.parametrize(("hours", "why"), [("-1", "-1.0 is not in the range x>=0."),
                                            ("nan", "nan is not a finite number."),
                                            ("inf", "inf is not a finite number.")])
def test_clean_with_negative_or_nan_reserved_hours_is_refused(tmp_path, hours, why):
    out = run("clean", FIXTURE, "--reserved-hours", hours, "--dry-run")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == f"rmqtool: error: Invalid value for '--reserved-hours': {why} (see 'rmqtool clean --help')\n"


def test_integer_help_keeps_its_own_range_and_names_no_long_bounds():
    out = run("query", "--help")
    assert "INTEGER RANGE [x>=1]" in out.stdout and "9223372036854775807" not in out.stdout
