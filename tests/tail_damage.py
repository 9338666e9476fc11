"""The fixture store crashed with a damaged tail: where its log ends, what recovery cuts, and the damage."""

from __future__ import annotations

from pathlib import Path

from rmqtool.structures.commitlog import message

SEG = 65536
LAST_SEGMENT = f"{2 * SEG:020d}"
LOG_END = 151686  # the fixture's commitlog ends here
CUT_AT = 151076  # the third-last record of the fixture: recovery stops at it once its body is damaged
GARBAGE = 100


def crash_with_damaged_tail(root: Path) -> None:
    """The body of the record at CUT_AT flipped, GARBAGE bytes after the end of the log, `abort` left
    and the checkpoint gone (so every index file is newer than it)."""
    seg = root / "commitlog" / LAST_SEGMENT
    b = bytearray(seg.read_bytes())
    b[CUT_AT - 2 * SEG + message.header_len(0) + 2] ^= 0xFF
    b[LOG_END - 2 * SEG : LOG_END - 2 * SEG + GARBAGE] = b"\xab" * GARBAGE
    seg.write_bytes(bytes(b))
    (root / "abort").touch()
    (root / "checkpoint").unlink()
