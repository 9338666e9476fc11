"""Shared fixtures: the golden stores written by the real broker, and rmqtool's own fixture store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
GOLDEN_ENV = "RMQTOOL_GOLDEN"
REQUIRE_GOLDEN_ENV = "RMQTOOL_REQUIRE_GOLDEN"


def golden_root() -> Path:
    return Path(os.environ.get(GOLDEN_ENV, ROOT.parent / "shared" / "golden"))


@pytest.fixture(scope="session")
def golden_v5() -> Path:
    """../shared/golden/v5-rocksdb: a 5.3.3 broker's store with RocksDB consume queues (read-only). Missing: as
    golden_basic."""
    path = golden_root() / "v5-rocksdb"
    if not (path / "expected.json").is_file():
        if os.environ.get(REQUIRE_GOLDEN_ENV):
            pytest.fail(f"golden store not found at {path}")
        pytest.skip(f"golden store not found at {path}")
    return path


@pytest.fixture(scope="session")
def golden_basic() -> Path:
    """../shared/golden/basic (read-only). Missing: a failure in CI, a skip elsewhere."""
    path = golden_root() / "basic"
    if not (path / "expected.json").is_file():
        message = f"golden store not found at {path} (set {GOLDEN_ENV})"
        if os.environ.get(REQUIRE_GOLDEN_ENV):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def golden_consumed(tmp_path_factory: pytest.TempPathFactory, golden_basic: Path) -> Path:
    """golden/basic's store with two consumer groups' committed offsets (cli_helpers.CONSUMER_OFFSETS);
    read-only: copy it before writing. Its broker.conf is golden_basic / "broker.conf"."""
    from cli_helpers import consumer_store

    return consumer_store(golden_basic, tmp_path_factory.mktemp("golden-consumed") / "store")


@pytest.fixture
def small_disk(tmp_path) -> Path:
    """A 1 MiB tmpfs (mounting needs root, as CI has)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True,
                              text=True)
    except FileNotFoundError:
        pytest.skip("no mount command: cannot make a small disk to fill")
    if done.returncode:
        pytest.skip(f"cannot mount a 1 MiB tmpfs to fill (needs root): {done.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=True)


@pytest.fixture(scope="session")
def golden_ha() -> Path:
    """../shared/golden/ha: a 4.9.7 master and slave on the wire (read-only). Missing: as golden_basic."""
    path = golden_root() / "ha"
    if not (path / "sync" / "wire.jsonl").is_file():
        message = f"golden HA captures not found at {path} (set {GOLDEN_ENV})"
        if os.environ.get(REQUIRE_GOLDEN_ENV):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def golden_expected(golden_basic: Path) -> dict:
    return json.loads((golden_basic / "expected.json").read_text())


@pytest.fixture(scope="session")
def fixture_store() -> Path:
    """fixtures/store (read-only: copy it before writing)."""
    return FIXTURES / "store"


@pytest.fixture(scope="session")
def fixture_conf() -> Path:
    return FIXTURES / "broker.conf"


@pytest.fixture
def store_copy(tmp_path: Path, fixture_store: Path) -> Path:
    """A writable copy of fixtures/store."""
    dst = tmp_path / "store"
    shutil.copytree(fixture_store, dst)
    return dst


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole run (two cores, as CI has)."""
    from rmqtool.spark.session import get_session

    session = get_session("local[2]")
    yield session
    session.stop()


_MARKED_FOLDERS = ("spark", "bench")  # tests/spark/, tests/bench/


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the xdist_group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Spark and bench tests carry their marker (`-m "not spark and not bench"` skips them locally; CI
    runs everything); so does every test that uses the Spark session. Under `-n N --dist loadgroup` the
    Spark tests share one xdist worker, so the run starts one Spark JVM, not one per worker."""
    for item in items:
        folder = item.path.parent.name
        if folder in _MARKED_FOLDERS:
            item.add_marker(folder)
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker("spark")
        if item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadgroup` that also keeps tests/spark/ and every `test_spark_*` function in one group. xdist 3.8
    groups by an `@group` suffix its workers write into node ids, which pytest 9.2's node ids no longer take
    (pytest-xdist#1386); the folder and the name are what the controller sees."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class SparkGroupScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            in_spark = Path(nodeid.split("::")[0]).parent.name == "spark" or "::test_spark_" in nodeid
            return "spark" if in_spark else super()._split_scope(nodeid)

    return SparkGroupScheduling(config, log)


GAP_BASE_MS = 1_700_000_000_000
GAP_AFTER_ROW = 200  # rows 0..199 are stored 137 ms apart, then 5 minutes pass with no message
GAP_MS = 300_000


@pytest.fixture(scope="session")
def gapped_store(tmp_path_factory: pytest.TempPathFactory, fixture_store: Path) -> Path:
    """fixtures/store's records again, each with its own store time: row i at GAP_BASE_MS + 137 * i, the rows
    from GAP_AFTER_ROW on GAP_MS later (read-only: copy it before writing)."""
    from cli_helpers import CONF, run

    work = tmp_path_factory.mktemp("gapped")
    exported = run("export", str(fixture_store))
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    for i, row in enumerate(rows):
        row["storeTimestamp"] = GAP_BASE_MS + 137 * i + (GAP_MS if i >= GAP_AFTER_ROW else 0)
    source = work / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = run("import", str(work / "store"), str(source), "--config", str(CONF))
    assert done.returncode == 0, done.stderr
    return work / "store"
