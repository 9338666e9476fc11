"""A config file is loaded and written by the broker's rules: .bak when the file is empty or broken, .tmp ignored."""

from __future__ import annotations

import pytest

from rmqtool.errors import RmqError
from rmqtool.structures.config import persist


def test_an_absent_file_is_an_empty_table(tmp_path):
    loaded = persist.load(tmp_path / "consumerOffset.json")
    assert (loaded.doc, loaded.source) == ({}, None)


def test_an_empty_file_is_loaded_from_its_bak(tmp_path):
    path = tmp_path / "consumerOffset.json"
    path.write_text("")
    persist.sibling(path, ".bak").write_text('{"offsetTable":{"T@g":{0:7}}}')
    loaded = persist.load(path)
    assert loaded.doc == {"offsetTable": {"T@g": {0: 7}}} and loaded.source.name == "consumerOffset.json.bak"


def test_a_broken_file_is_loaded_from_its_bak_and_says_why(tmp_path):
    path = tmp_path / "topics.json"
    path.write_text('{"topicConfigTable":')
    persist.sibling(path, ".bak").write_text('{"topicConfigTable":{}}')
    loaded = persist.load(path)
    assert loaded.doc == {"topicConfigTable": {}} and "not a config document" in loaded.error


def test_a_broken_file_without_a_bak_is_an_error_naming_it(tmp_path):
    path = tmp_path / "topics.json"
    path.write_text("{x")
    with pytest.raises(RmqError, match=r"topics.json: not a config document"):
        persist.load(path)


def test_save_keeps_the_old_text_in_bak_and_leaves_no_tmp(tmp_path):
    path = tmp_path / "config" / "delayOffset.json"
    persist.save(path, {"offsetTable": {1: 3}})
    assert path.read_text() == '{\n\t"offsetTable":{1:3\n\t}\n}'
    assert not persist.sibling(path, ".bak").exists()
    persist.save(path, {"offsetTable": {1: 4}})
    assert persist.sibling(path, ".bak").read_text() == '{\n\t"offsetTable":{1:3\n\t}\n}'
    assert path.read_text() == '{\n\t"offsetTable":{1:4\n\t}\n}'
    assert sorted(p.name for p in path.parent.iterdir()) == ["delayOffset.json", "delayOffset.json.bak"]
