"""The broker's config dialect: integer map keys written without quotes, read and written back as it writes them."""

from __future__ import annotations

import json

import pytest

from rmqtool.structures.config import fastjson

BROKER_TEXT = """{
\t"offsetTable":{
\t\t"TopicTest@groupA":{0:250,1:248,2:249,3:250
\t\t},
\t\t"%RETRY%groupA@groupA":{0:0
\t\t}
\t}
}"""


def test_a_strict_json_parser_refuses_what_the_broker_writes():
    with pytest.raises(ValueError):
        json.loads(BROKER_TEXT)


def test_unquoted_integer_keys_are_read_as_integers():
    doc = fastjson.loads(BROKER_TEXT)
    assert doc == {"offsetTable": {"TopicTest@groupA": {0: 250, 1: 248, 2: 249, 3: 250},
                                   "%RETRY%groupA@groupA": {0: 0}}}
    assert all(isinstance(k, int) for k in doc["offsetTable"]["TopicTest@groupA"])


def test_what_is_read_is_written_back_byte_for_byte():
    assert fastjson.dumps(fastjson.loads(BROKER_TEXT)) == BROKER_TEXT


def test_the_golden_delay_offset_file_round_trips(golden_basic):
    text = (golden_basic / "store" / "config" / "delayOffset.json").read_text()
    assert fastjson.loads(text) == {"offsetTable": {}}
    assert fastjson.dumps(fastjson.loads(text)) == text


def test_quoted_keys_stay_strings_and_plain_json_reads_as_json():
    text = '{"a": {"0": 1, "b": [1, 2.5, true, null, "x\\u00e9"]}, "n": -3}'
    assert fastjson.loads(text) == json.loads(text)


def test_string_keyed_objects_and_lists_are_written_one_member_a_line():
    assert fastjson.dumps({"dataVersion": {"counter": 2, "timestamp": 17}, "list": [1, "a"], "empty": {}}) == (
        '{\n\t"dataVersion":{\n\t\t"counter":2,\n\t\t"timestamp":17\n\t},\n\t"list":[\n\t\t1,\n\t\t"a"\n\t],'
        '\n\t"empty":{}\n}')


def test_a_key_that_is_neither_a_string_nor_an_integer_is_refused_with_its_place():
    with pytest.raises(ValueError, match="integer key: line 1 column 2"):
        fastjson.loads("{abc:1}")
    with pytest.raises(ValueError, match="Expecting ','"):
        fastjson.loads("{0:1 1:2}")
    with pytest.raises(ValueError):
        fastjson.loads('{"a":1,}')


@pytest.mark.parametrize("text", [
    '{"a\\"b{1:": {"0": 1, 2: [3, {"x": "y,5:"}]}, "t": "\\t", -4 : null}',
    '{"k\\u0000": {7: 1}}',  # a NUL in the text: the fast path steps aside
    '{"raw\ttab": {0:1}}',
])
def test_the_fast_path_and_the_dialects_parser_read_alike(text):
    assert fastjson.loads(text) == fastjson._DECODER.decode(text)
