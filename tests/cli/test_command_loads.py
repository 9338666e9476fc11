"""verify and export as commands load only what they use: a clean verify loads no repair planner, an export
process never imports pandas (pyarrow would, to look for pandas objects it cannot be handed), and the
files it writes are those an export in a process with pandas writes."""

import json
import subprocess
import sys

from cli_helpers import CONF, FIXTURE, RUN_GUARD_S

from rmqtool.engine.reader import open_reader
from rmqtool.ops.export import export_store

PROBE = (
    "import json, sys\n"
    "from rmqtool.cli import app\n"
    "try:\n"
    "    app.main(sys.argv[1:])\n"
    "except SystemExit as e:\n"
    "    code = e.code\n"
    "sys.stderr.write(json.dumps({'code': code, 'modules': sorted(m for m in sys.modules\n"
    "                             if m.split('.')[0] in ('pandas', 'rmqtool'))}) + '\\n')\n"
)


def probe(*args: object) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, *map(str, args)], capture_output=True, text=True,
                         timeout=RUN_GUARD_S)
    return json.loads(out.stderr.strip().splitlines()[-1])


def test_a_clean_verify_loads_no_repair_planner():
    got = probe("verify", FIXTURE, "--config", CONF, "--json")
    assert got["code"] == 0
    assert "rmqtool.ops.verify" in got["modules"] and "rmqtool.ops.doctor" not in got["modules"]


def test_export_command_imports_no_pandas_and_writes_the_bytes_of_an_export_beside_pandas(tmp_path):
    import pandas  # noqa: F401 (the in-process export runs with pandas loaded, as a library caller may)

    for name in ("rows.parquet", "rows.jsonl"):
        got = probe("export", FIXTURE, "--config", CONF, "--out", tmp_path / f"command-{name}")
        assert got["code"] == 0
        assert not [m for m in got["modules"] if m.startswith("pandas")]
        export_store(open_reader(FIXTURE, CONF), tmp_path / f"library-{name}", None)
        assert (tmp_path / f"command-{name}").read_bytes() == (tmp_path / f"library-{name}").read_bytes()
