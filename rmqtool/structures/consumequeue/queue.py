"""One consume queue (topic, queueId): 20-byte entries in a queue of fixed-size files.

Entry k sits at byte k x 20 of the queue. The broker appends at the queue's write position;
an entry whose commitlog offset is already covered is a repeat and is skipped; a queue whose
first file starts past 0 has its leading entries filled with (0, Integer.MAX_VALUE, 0).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rmqtool.files.filequeue import FileQueue
from rmqtool.structures import consumequeue
from rmqtool.structures.consumequeue import ENTRY_DTYPE, ENTRY_LEN


class ConsumeQueue:
    def __init__(self, directory: Path, topic: str, queue_id: int, file_size: int, preallocate: bool = False) -> None:
        self.topic, self.queue_id = topic, queue_id
        self.files = FileQueue(directory, file_size, preallocate)
        self.max_physical_end = 0  # commitlog offset + size of the last entry
        for mf in self.files.files[:-1]:
            mf.wrote = mf.flushed = mf.size
        last = self.files.last
        if last is not None:
            entries = consumequeue.decode_entries(last.map)
            n = consumequeue.written_count(entries)
            last.wrote = last.flushed = n * ENTRY_LEN
            if n:
                self.max_physical_end = int(entries["commitLogOffset"][n - 1]) + int(entries["size"][n - 1])
            del entries

    @property
    def max_offset_in_queue(self) -> int:
        """The queue offset the next entry gets."""
        return self.files.max_offset // ENTRY_LEN

    def put(self, offsets: np.ndarray, sizes: np.ndarray, tags_codes: np.ndarray, first_queue_offset: int) -> None:
        """Append entries for consecutive records (their queue offsets start at `first_queue_offset`)."""
        keep = offsets + sizes > self.max_physical_end
        if not keep.all():
            offsets, sizes, tags_codes = offsets[keep], sizes[keep], tags_codes[keep]
            first_queue_offset += int(np.argmax(keep)) if keep.any() else len(keep)
        if len(offsets) == 0:
            return
        rows = np.empty(len(offsets), dtype=ENTRY_DTYPE)
        rows["commitLogOffset"], rows["size"], rows["tagsCode"] = offsets, sizes, tags_codes
        data = memoryview(rows.tobytes())
        if not self.files.files:
            self._first_file(first_queue_offset * ENTRY_LEN)
        while data:
            mf = self.files.writable()
            n = min(len(data), mf.room)
            mf.append(data[:n])
            mf.release(mf.wrote)  # written: unmap, so resident memory stays bounded (the page cache keeps it)
            data = data[n:]
        self.max_physical_end = int(offsets[-1]) + int(sizes[-1])

    def _first_file(self, logic_offset: int) -> None:
        mf = self.files.roll(logic_offset)
        lead = (logic_offset - mf.from_offset) // ENTRY_LEN
        if lead:
            mf.append(consumequeue.filler_entries(lead))

    def flush(self) -> None:
        self.files.flush()

    def close(self) -> None:
        self.files.close()
