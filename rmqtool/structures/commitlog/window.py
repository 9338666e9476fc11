"""The good records of one stretch of the log as verify's checkers take them (`Structure.log_checker`):
where each record sits, its queue and queue offset, tagsCode, index keys and the newest store time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # start-up: the registry imports this module; numpy loads when a window is built
    import numpy as np


@dataclass
class Window:
    """The good records of one stretch of the log, as the dispatcher sees them."""

    end: int  # the physical offset after the last record
    offset: np.ndarray
    size: np.ndarray
    qkey: np.ndarray  # index into the (topic, queue) table
    qoffset: np.ndarray
    tags: np.ndarray
    in_cq: np.ndarray
    key_hash: np.ndarray  # one per index key, with the offset of its record
    key_offset: np.ndarray
    last_store_ts: int
