"""What the structures type the store, its settings and a check's report as (`structures.view`,
`structures.settings`) is what the engine and verify hand them: the reader, its config and verify's report
have every member the Protocols name."""

from __future__ import annotations

from rmqtool.engine.config import StoreConfig
from rmqtool.engine.reader import open_reader
from rmqtool.ops.verify import VerifyReport
from rmqtool.structures.settings import StoreSettings
from rmqtool.structures.view import CheckReport, StoreView


def test_the_engine_reader_is_a_store_view_and_its_config_the_settings(fixture_store, fixture_conf):
    reader = open_reader(fixture_store, fixture_conf)
    assert isinstance(reader, StoreView)
    assert isinstance(reader.config, StoreSettings) and isinstance(StoreConfig(), StoreSettings)


def test_verify_report_is_a_check_report():
    assert isinstance(VerifyReport(), CheckReport)


def test_an_object_short_of_a_member_is_not_one():
    assert not isinstance(object(), StoreView) and not isinstance(object(), CheckReport)
