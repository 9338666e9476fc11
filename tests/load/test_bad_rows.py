"""Bad producer rows and bad `append` values: each is one line on stderr naming its line and field,
exit 2, and nothing written (a store that was there is byte-identical, a store that was not is not made)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_helpers import CONF, RMQTOOL, RUN_GUARD_S, fixture_copy, run, tree_digest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refusals import GOOD, assert_refused, nothing

from rmqtool.cli.app import main

INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1
DEPTH = 32  # the deepest nesting a row may have


def test_a_null_line_is_refused_not_a_segfault(tmp_path):
    assert_refused(tmp_path, "append", b"null", "FILE:2: a row must be a JSON object, not null; nothing was written")


def test_a_null_line_alone_is_refused_not_a_segfault(tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_text("null\n")
    out = run("append", str(tmp_path / "new"), "--batch", str(src), "--config", str(CONF))
    assert (out.returncode, out.stderr) == (2, f"rmqtool: error: {src}:1: a row must be a JSON object, not null; "
                                               "nothing was written\n")
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(("line", "field", "reason"), [
    (b'{"topic": 5}', "topic", "must be a string"),
    (b'{"topic": "T", "bodyText": 5}', "bodyText", "must be a string"),
    (b'{"topic": "T", "keys": 5}', "keys", "must be a string or a list of strings"),
    (b'{"topic": "T", "tags": {}}', "tags", "must be a string"),
])
def test_a_value_of_the_wrong_json_type_is_refused_not_stored_as_text(tmp_path, line, field, reason):
    assert_refused(tmp_path, "append", line, nothing("FILE:2", field, reason))


@pytest.mark.parametrize(("column", "values", "reason"), [
    ("topic", pa.array([5]), "must be a string"),
    ("queueId", pa.array(["5"]), "must be an integer"),
    ("flag", pa.array([2**64 - 1], pa.uint64()), f"out of range [{-INT32_MAX - 1}, {INT32_MAX}]"),
])
def test_a_parquet_column_of_the_wrong_type_is_refused_not_cast(tmp_path, column, values, reason):
    src = tmp_path / "rows.parquet"
    columns = {"topic": pa.array(["T"]), column: values}
    pq.write_table(pa.table(columns), src)
    out = run("import", str(tmp_path / "new"), str(src), "--config", str(CONF))
    assert (out.returncode, out.stderr) == (2, "rmqtool: error: " + nothing(f"{src}: row 1", column, reason) + "\n")
    assert not (tmp_path / "new").exists()


def test_a_null_property_value_is_refused_not_dropped(tmp_path):
    assert_refused(tmp_path, "append", b'{"topic": "T", "properties": {"a": "x", "b": null}}',
                   nothing("FILE:2", "properties", "a value is null (give a string, or leave the pair out)"))


def test_a_timestamp_beyond_64_bits_is_refused_not_an_overflow_error(tmp_path):
    assert_refused(tmp_path, "append", b'{"topic": "T", "bornTimestamp": 99999999999999999999999}',
                   nothing("FILE:2", "bornTimestamp", f"out of range [{-INT64_MAX - 1}, {INT64_MAX}]"))


def test_an_offset_beyond_64_bits_in_an_export_is_refused_not_an_overflow_error(tmp_path):
    line = {"topic": "T", "queueId": 0, "propertiesString": "", "storeTimestamp": 5, "commitLogOffset": 2**64}
    src = tmp_path / "export.jsonl"
    src.write_text(json.dumps(line) + "\n")
    for store in (tmp_path / "new", fixture_copy(tmp_path)):
        before = tree_digest(store) if store.exists() else None
        out = run("import", str(store), str(src), "--config", str(CONF))
        assert (out.returncode, out.stderr) == (2, "rmqtool: error: " + nothing(
            f"{src}:1", "commitLogOffset", f"out of range [0, {INT64_MAX}]") + "\n")
        assert (tree_digest(store) if store.exists() else None) == before


def test_keys_as_a_list_of_nulls_are_refused_not_an_index_error(tmp_path):
    assert_refused(tmp_path, "append", b'{"topic": "T", "keys": [null, null]}',
                   nothing("FILE:2", "keys", "must be a string or a list of strings"))


def test_keys_as_a_list_of_numbers_are_refused_not_an_arrow_error(tmp_path):
    assert_refused(tmp_path, "append", b'{"topic": "T", "keys": [1, 2]}',
                   nothing("FILE:2", "keys", "must be a string or a list of strings"))


def test_a_file_that_is_not_utf8_is_refused_not_a_unicode_decode_error(tmp_path):
    assert_refused(tmp_path, "append", b'{"topic": "T\xff"}', nothing("FILE:2", "topic", "not UTF-8 text"))


@pytest.mark.parametrize(("line", "field"), [
    (b'{"topic": "T\\ud800"}', "topic"),
    (b'{"topic": "T", "bodyText": "a\\udc00b"}', "bodyText"),
    (b'{"topic": "T", "properties": {"p": "\\ud83d"}}', "properties"),
])
def test_a_lone_surrogate_is_refused_not_a_unicode_encode_error(tmp_path, line, field):
    assert_refused(tmp_path, "append", line, nothing("FILE:2", field, "not UTF-8 text (a lone surrogate)"))


def test_deeply_nested_json_is_refused_not_a_recursion_error(tmp_path):
    deep = b"[" * 100_000 + b"]" * 100_000
    assert_refused(tmp_path, "append", b'{"topic": "T", "properties": {"p": ' + deep + b"}}",
                   nothing("FILE:2", "properties", f"nested deeper than {DEPTH} levels"))


@pytest.mark.parametrize(("lines", "want"), [
    (b'{"topic": "T", "bodyText":\n[1, 2]', "FILE:2: malformed JSON (the row's object does not end on its line)"),
    (b'{"topic" "T"}\n[1, 2]', "FILE:2: malformed JSON (Expecting ':' delimiter: line 1 column 10 (char 9))"),
    (b'{"topic": "T", "queueId": "z"}\n[1, 2]', "FILE:2: queueId: must be an integer"),
], ids=["unended", "malformed", "misfit"])
def test_a_broken_line_before_a_list_line_is_reported_at_the_broken_line(tmp_path, lines, want):
    assert_refused(tmp_path, "import", lines, want + "; nothing was written")


def test_a_line_longer_than_any_row_is_refused_before_it_is_read_whole(tmp_path):
    src = tmp_path / "rows.jsonl"
    with src.open("wb") as f:  # 80 MiB of one body, then garbage after the object
        f.write(GOOD.encode() + b'\n{"topic": "T", "bodyText": "')
        for _ in range(80):
            f.write(b"x" * (1 << 20))
        f.write(b'"} garbage\n')
    out = run("import", tmp_path / "new", src, "--config", CONF)
    assert (out.returncode, out.stderr) == (2, f"rmqtool: error: {src}:2: a line longer than 64 MiB (no row of a "
                                               "message the broker stores is); the rest of it was not read; nothing "
                                               "was written\n")
    assert not (tmp_path / "new").exists()


def test_a_long_line_with_a_fault_in_its_first_block_is_refused_at_that_line(tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_bytes(GOOD.encode() + b'\n{"topic": "T"} x' + b"y" * (20 << 20) + b"\n")
    out = run("import", tmp_path / "new", src, "--config", CONF)
    assert (out.returncode, out.stderr) == (2, f"rmqtool: error: {src}:2: text after the row's object (one object "
                                               "per line); nothing was written\n")


@pytest.mark.parametrize(("option", "value", "field", "low", "high"), [
    ("--queue", 2**31, "queueId", 0, INT32_MAX),
    ("--flag", 2**40, "flag", -INT32_MAX - 1, INT32_MAX),
])
def test_an_append_value_beyond_its_field_width_is_refused_before_the_store_is_made(tmp_path, option, value, field,
                                                                                     low, high):
    assert_refused(tmp_path, "append", None, f"MESSAGE_ILLEGAL: {field}: {value} out of range [{low}, {high}]",
                   "--topic", "T", "--body", "b", option, str(value))


def test_an_append_topic_that_is_not_utf8_is_refused_not_a_unicode_error(tmp_path):
    for store in (tmp_path / "new", fixture_copy(tmp_path)):
        before = tree_digest(store) if store.exists() else None
        out = subprocess.run([RMQTOOL, b"append", bytes(store), b"--config", bytes(CONF), b"--topic", b"T\xff",
                              b"--body", b"b"], capture_output=True, timeout=RUN_GUARD_S)
        assert (out.returncode, out.stderr) == (2, b"rmqtool: error: MESSAGE_ILLEGAL: topic: not UTF-8 text\n")
        assert (tree_digest(store) if store.exists() else None) == before


# ---- any bad row: exit 0 or 2, never a traceback, and exit 2 leaves the store as it was --------------
_FIELDS = ["topic", "queueId", "body", "bodyText", "tags", "keys", "properties", "bornTimestamp", "bornHost",
           "storeHost", "flag", "delayLevel"]
_INTS = ["queueId", "bornTimestamp", "flag", "delayLevel"]
_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                         max_size=3), max_leaves=6)
_SURROGATE = st.integers(0xD800, 0xDFFF)
_DEPTHS = st.integers(1, 3000)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@st.composite
def bad_lines(draw) -> bytes:
    row = {"topic": "T", "bodyText": "x"}
    kind = draw(st.sampled_from(["type", "range", "surrogate", "nesting", "not-object", "bytes"]))
    field = draw(st.sampled_from(_FIELDS))
    if kind == "type":
        row[field] = draw(_JSON)
    elif kind == "range":
        row[draw(st.sampled_from(_INTS))] = draw(st.integers(2**31, 2**70) | st.integers(-(2**70), -(2**31) - 1))
    elif kind in ("surrogate", "nesting"):  # json.dumps writes a lone surrogate as its \\u escape
        value = json.dumps("a" + chr(draw(_SURROGATE)) + "b") if kind == "surrogate" else _nested(draw(_DEPTHS))
        if draw(st.booleans()):
            value = '{"p": ' + value + "}"
        row.pop(field, None)
        return ("{" + "".join(f'"{k}": {json.dumps(v)}, ' for k, v in row.items()) + f'"{field}": {value}}}').encode()
    elif kind == "not-object":
        return draw(st.sampled_from([b"null", b"5", b"[]", b'"x"', b"true", b"[[[[", b"{} {}", b'{"topic": "T"} 5']))
    line = json.dumps(row).encode()
    if kind == "bytes":
        at = draw(st.integers(0, len(line)))
        line = line[:at] + draw(st.binary(min_size=1, max_size=3).filter(lambda b: not b.isascii())) + line[at:]
    return line


def _main(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(list(args))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code, err.getvalue()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(bad_lines(), min_size=1, max_size=3), good_first=st.booleans(),
       command=st.sampled_from(["append", "import"]))
def test_no_bad_row_is_a_traceback_or_a_partial_write(tmp_path_factory, lines, good_first, command):
    tmp = tmp_path_factory.mktemp("bad")
    store = fixture_copy(tmp)
    src = tmp / "rows.jsonl"
    src.write_bytes(b"\n".join([GOOD.encode()] * good_first + lines) + b"\n")
    before = tree_digest(store)
    inputs = [str(src)] if command == "import" else ["--batch", str(src)]
    code, err = _main(command, str(store), *inputs, "--config", str(CONF))
    assert code in (0, 2) and "Traceback" not in err, err
    if code == 2:
        assert err.startswith("rmqtool: error: ") and err.count("\n") == 1, err
        assert tree_digest(store) == before


@pytest.mark.parametrize("command", ["append", "import"])
def test_a_negative_reconsume_times_in_a_producer_row_is_refused_not_dropped(tmp_path, command):
    assert_refused(tmp_path, command, b'{"topic": "T", "reconsumeTimes": -1}',
                   nothing("FILE:2", "reconsumeTimes", f"out of range [0, {INT32_MAX}]"))


def test_a_negative_reconsume_times_in_an_export_is_refused_not_stored(tmp_path):
    line = {"topic": "T", "queueId": 0, "propertiesString": "", "storeTimestamp": 5, "commitLogOffset": 0,
            "reconsumeTimes": -1}
    src = tmp_path / "export.jsonl"
    src.write_text(json.dumps(line) + "\n")
    out = run("import", str(tmp_path / "new"), str(src), "--config", str(CONF))
    assert (out.returncode, out.stderr) == (2, "rmqtool: error: " + nothing(
        f"{src}:1", "reconsumeTimes", f"out of range [0, {INT32_MAX}]") + "\n")
    assert not (tmp_path / "new").exists()


def test_a_producer_rows_reconsume_times_is_stored_not_dropped(tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_text('{"topic": "T", "bodyText": "x", "reconsumeTimes": 3}\n')
    assert run("append", str(tmp_path / "s"), "--batch", str(src), "--config", str(CONF)).returncode == 0
    out = run("decode", "commitlog", str(tmp_path / "s"), "--jsonl", "--config", str(CONF))
    assert [json.loads(x)["reconsumeTimes"] for x in out.stdout.splitlines()] == [3]
