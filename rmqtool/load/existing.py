"""Records of an export that a store already holds: the leading rows of an as-stored input whose
commitLogOffset is below the store's write position, each confirmed to be the same record (same
topic, times, properties and body at that offset)."""

from __future__ import annotations

import base64

import pyarrow as pa

from rmqtool.errors import RmqError
from rmqtool.format import crc, message
from rmqtool.store.reader import StoreReader


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
        offsets = batch.column("commitLogOffset").to_pylist()
        if not offsets or offsets[0] is None or offsets[0] >= self.end:
            return 0
        n = 0
        for offset in offsets:
            if offset is None or offset >= self.end:
                break
            found = self.reader.read_record(offset, verify_crc=False)
            if not isinstance(found, message.Message) or not _same(batch, n, found):
                raise RmqError(f"{where(n)}: commitLogOffset {offset}: the store holds a different record there; "
                               "nothing was written")
            n += 1
        if not self.skip:
            raise RmqError(f"{where(0)}: the store already holds this record (commitLogOffset {offsets[0]}, the same "
                           "record) and the ones after it up to its write position "
                           f"{self.end}: pass --skip-existing to import only the records after them")
        self.skipped += n
        return n


def _same(batch: pa.RecordBatch, row: int, stored: message.Message) -> bool:
    """Whether row `row` of an export is the record `stored`: same topic, times, properties and body."""
    def value(name: str):
        return batch.column(name)[row].as_py() if name in batch.schema.names else None

    body = value("body")
    if isinstance(body, str):
        try:
            body = base64.b64decode(body, validate=True)
        except ValueError:
            return False
    props = value("propertiesString")
    return (value("topic") == stored.topic and value("storeTimestamp") == stored.store_timestamp
            and value("bornTimestamp") == stored.born_timestamp
            and (props is None or props == stored.properties_string)
            and (body is None or crc.body_crc(body) == stored.body_crc))
