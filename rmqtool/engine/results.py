"""What an append returns: the broker's put status and the AppendMessageResult fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from rmqtool.structures.commitlog import msgid
from rmqtool.structures.commitlog.hosts import SocketAddress


class PutStatus(str, Enum):
    """PutMessageStatus values the store reports."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"  # a SYNC_MASTER's put, stored, that no slave acked in time
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"  # a SYNC_MASTER's put, stored, with no slave close enough


@dataclass(slots=True)
class PutResult:
    """One put: status, and for PUT_OK where the records went.

    `msg_id` is computed on first use (a batch's is the comma-joined list), as the broker
    computes it lazily.
    """

    status: PutStatus
    reason: str = ""
    wrote_offset: int = -1
    wrote_bytes: int = 0
    queue_offset: int = -1
    store_timestamp: int = 0
    msg_count: int = 0
    store_host: SocketAddress | None = None
    offsets: list[int] | tuple[int, ...] = field(default_factory=tuple, repr=False)

    @property
    def ok(self) -> bool:
        return self.status is PutStatus.PUT_OK

    @property
    def msg_ids(self) -> list[str]:
        return [msgid.create(self.store_host, o) for o in self.offsets] if self.store_host else []

    @property
    def msg_id(self) -> str:
        return ",".join(self.msg_ids)

    def to_json(self) -> dict:
        out = {"status": self.status.value}
        if self.reason:
            out["reason"] = self.reason
        if self.ok:
            out.update(msgId=self.msg_id, wroteOffset=self.wrote_offset, wroteBytes=self.wrote_bytes,
                       queueOffset=self.queue_offset, storeTimestamp=self.store_timestamp, msgNum=self.msg_count)
        return out


def refused(status: PutStatus, reason: str) -> PutResult:
    return PutResult(status, reason)
