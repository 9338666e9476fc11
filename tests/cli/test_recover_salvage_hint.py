"""`recover` cuts every record after a damaged one, as the broker does; when intact records lie past the cut it
says how many, and that `rmqtool salvage` run first keeps them."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import CONF, fixture_copy, run

from rmqtool.engine.config import StoreConfig
from rmqtool.ops.recovery import plan_recovery
from rmqtool.structures.commitlog import message

SEG = 65536
CUT_AT = 151076  # the fixture's third-last record; the two after it (217 + 193 bytes) are intact
INTACT, INTACT_BYTES = 2, 217 + 193


def damage_body(store: Path) -> None:
    seg = store / "commitlog" / f"{2 * SEG:020d}"
    b = bytearray(seg.read_bytes())
    b[CUT_AT - 2 * SEG + message.header_len(0) + 2] ^= 0xFF
    seg.write_bytes(bytes(b))


def test_recover_cuts_intact_records_after_a_bad_crc_without_naming_salvage(tmp_path):
    store = fixture_copy(tmp_path)
    assert run("recover", store, "--config", CONF, "--dry-run").stderr == ""  # nothing cut: nothing said
    damage_body(store)
    plan = plan_recovery(store, StoreConfig.from_file(CONF)[0])
    assert (plan.end, plan.salvageable, plan.salvageable_bytes) == (CUT_AT, INTACT, INTACT_BYTES)
    cut = (f"2 intact records ({INTACT_BYTES} bytes) after the damaged record at commitlog offset {CUT_AT} "
           "(body CRC mismatch)")
    for args in ((), ("--json",)):
        out = run("recover", store, "--config", CONF, "--dry-run", *args)
        assert out.returncode == 0, out.stderr
        assert out.stderr == (f"recover: would cut {cut}; `rmqtool doctor {store} --apply` cuts there and appends "
                              f"them again (or run `rmqtool salvage {store} --out FILE` first to keep them)\n")
    out = run("recover", store, "--config", CONF, "--json")
    assert out.returncode == 0, out.stderr
    lost = Path(json.loads(out.stdout)["lostDir"]).relative_to(store)
    assert out.stderr == (f"recover: cut {cut}; their bytes are in {lost}/, and `rmqtool salvage {store} --out FILE` "
                          "run before recover keeps them as messages\n")
    assert run("recover", store, "--config", CONF, "--dry-run").stderr == ""
