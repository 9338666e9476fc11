"""Records of an export that a store already holds: the leading rows of an as-stored input whose
commitLogOffset is below the store's write position, each confirmed to be the same record (same
topic, times, properties and body at that offset)."""

from __future__ import annotations

import base64

import numpy as np
import pyarrow as pa

from rmqtool.engine.reader import StoreReader
from rmqtool.errors import RmqError
from rmqtool.structures.commitlog import crc, message


class ExistingRecords:
    """Counts and confirms the rows of an as-stored input that are already in the store below `end`."""

    def __init__(self, reader: StoreReader, end: int, skip: bool) -> None:
        self.reader = reader
        self.end = end
        self.skip = skip
        self.skipped = 0

    def leading(self, batch: pa.RecordBatch, where) -> int:
        """How many leading rows of `batch` the store holds already; a row below the write position
        that differs from the store's record there, or any such row without `skip`, is an RmqError."""
        offsets = batch.column("commitLogOffset").fill_null(self.end).to_numpy()
        n = int(np.argmax(offsets >= self.end)) if (offsets >= self.end).any() else len(offsets)
        if n == 0:
            return 0
        for row, values in enumerate(batch.slice(0, n).to_pylist()):
            found = self.reader.read_record(values["commitLogOffset"], verify_crc=False)
            if not isinstance(found, message.Message) or not _same(values, found):
                raise RmqError(f"{where(row)}: commitLogOffset {values['commitLogOffset']}: the store holds a "
                               "different record there; nothing was written")
        if not self.skip:
            raise RmqError(f"{where(0)}: the store already holds this record (commitLogOffset {int(offsets[0])}, the "
                           "same record) and the ones after it up to its write position "
                           f"{self.end}: pass --skip-existing to import only the records after them")
        self.skipped += n
        return n


def _same(row: dict, stored: message.Message) -> bool:
    """Whether an export's row is the record `stored`: same topic, times, properties and body."""
    body = row.get("body")
    if isinstance(body, str):
        try:
            body = base64.b64decode(body, validate=True)
        except ValueError:
            return False
    props = row.get("propertiesString")
    return (row.get("topic") == stored.topic and row.get("storeTimestamp") == stored.store_timestamp
            and row.get("bornTimestamp") == stored.born_timestamp
            and (props is None or props == stored.properties_string)
            and (body is None or crc.body_crc(body) == stored.body_crc))
