"""The messages fixtures/make_store.py writes, for tests that check the fixture store."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_MAKE = Path(__file__).resolve().parent.parent / "fixtures" / "make_store.py"


def expected_messages():
    spec = importlib.util.spec_from_file_location("make_store", _MAKE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fixture_messages()
