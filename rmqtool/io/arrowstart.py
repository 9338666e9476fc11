"""pyarrow in a command process that never holds a pandas object: started without pandas.

pyarrow looks for pandas on its first conversion of a numpy array (to tell a pandas Categorical from an
array) and of a Python sequence (for pandas' null values), and imports it when it is installed: about
0.3 s of CPU, a fifth of a 1 M-message export's start, for checks that can only answer "no" in a process
that made no pandas object. `without_pandas` hides pandas from the process, so that each look fails at
once. Only a command's own process calls it, before its first rows: a library caller may hand pyarrow
pandas objects.
"""

from __future__ import annotations

import sys
from importlib.abc import MetaPathFinder


class _HidePandas(MetaPathFinder):
    def find_spec(self, name: str, path: object, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def without_pandas() -> None:
    """pandas hidden from this process from now on (nothing done when it is loaded already)."""
    if "pandas" not in sys.modules and not any(isinstance(f, _HidePandas) for f in sys.meta_path):
        sys.meta_path.insert(0, _HidePandas())
