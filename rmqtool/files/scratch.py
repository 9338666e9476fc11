"""Scratch files of a bulk load: named numpy arrays back to back in `.npy` form.

No zip, no compression, no per-member checksum: they are written once and read once by the
load's own tasks on the same file system (the staged store files carry the manifest's
checksums). A file appears whole or not at all (written under a temporary name, renamed).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

_TMP_SUFFIX = ".tmp"


def save_arrays(path: Path, **arrays: np.ndarray) -> None:
    """Write the arrays (no object arrays) to `path`, atomically."""
    tmp = path.with_name(path.name + _TMP_SUFFIX)
    with open(tmp, "wb") as f:
        np.save(f, np.array(list(arrays), dtype=str), allow_pickle=False)
        for value in arrays.values():
            np.save(f, np.asarray(value), allow_pickle=False)
    os.replace(tmp, path)


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays `save_arrays` wrote, by name."""
    with open(path, "rb") as f:
        names = np.load(f, allow_pickle=False)
        return {str(name): np.load(f, allow_pickle=False) for name in names}
