"""verify and export as commands load only what they use: a clean verify loads no repair planner, an export
process never imports pandas (pyarrow would, to look for pandas objects it cannot be handed), and the
files it writes are those an export in a process with pandas writes."""


from cli_helpers import CONF, FIXTURE, command_probe

from rmqtool.engine.reader import open_reader
from rmqtool.ops.export import export_store


def test_a_clean_verify_loads_no_repair_planner():
    got = command_probe("verify", FIXTURE, "--config", CONF, "--json")
    assert got["code"] == 0
    assert "rmqtool.ops.verify" in got["modules"] and "rmqtool.ops.doctor" not in got["modules"]


def test_export_command_imports_no_pandas_and_writes_the_bytes_of_an_export_beside_pandas(tmp_path):
    import pandas  # noqa: F401 (the in-process export runs with pandas loaded, as a library caller may)

    for name in ("rows.parquet", "rows.jsonl"):
        got = command_probe("export", FIXTURE, "--config", CONF, "--out", tmp_path / f"command-{name}")
        assert got["code"] == 0
        assert not [m for m in got["modules"] if m.startswith("pandas")]
        export_store(open_reader(FIXTURE, CONF), tmp_path / f"library-{name}", None)
        assert (tmp_path / f"command-{name}").read_bytes() == (tmp_path / f"library-{name}").read_bytes()
