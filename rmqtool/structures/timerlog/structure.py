"""The 5.x timer log: its units checked (a unit that is not one, a segment left unclosed) and its files sized
for `info`."""

from __future__ import annotations

from pathlib import Path

from rmqtool.files.segments import list_segments
from rmqtool.report import Finding
from rmqtool.structures import timerlog
from rmqtool.structures.structure import Structure
from rmqtool.structures.timerlog import TIMER_FILES
from rmqtool.structures.timerlog.reader import TIMERLOG_DIR, timer_units
from rmqtool.structures.view import StoreView


class TimerLog(Structure):
    name = "timerlog"
    folder = TIMERLOG_DIR

    def recognise(self, head: bytes, size: int) -> str | None:
        """A timer log segment starts with a unit (size 52, a unit's magic) or a blank."""
        if len(head) >= timerlog.BLANK_LEN and timerlog.BLANK.codec.unpack_from(head, 0)[2] == timerlog.BLANK_MAGIC:
            return None
        if len(head) >= timerlog.UNIT_LEN:
            unit_size, _, magic = timerlog.UNIT.codec.unpack_from(head, 0)[:3]
            if unit_size == timerlog.UNIT_LEN and timerlog.magic_ok(magic):
                return None
        return "its first bytes are neither a timer unit nor a blank"

    def place(self, path: Path) -> Path | None:
        return path.parent.parent if path.parent.name == TIMERLOG_DIR and path.name.isdigit() else None

    def owns(self, path: Path, root: Path) -> bool:
        """The timer store's files at the root (`timerwheel`, `timercheck`) and every file of `timerlog/`."""
        return any(path == root / name or path.is_relative_to(root / name) for name in TIMER_FILES)

    def keeps_folder(self, folder: Path, root: Path) -> bool:
        return folder.parent == root and folder.name in TIMER_FILES

    def file_findings(self, view: StoreView) -> list[Finding]:
        """A unit that is not one, or a segment that ends in zeros with later segments after it."""
        directory = view.paths.root / TIMERLOG_DIR
        if not directory.is_dir():
            return []
        return [u for u in timer_units(directory) if isinstance(u, Finding)]

    def info(self, view: StoreView, doc: dict) -> tuple[str, dict] | None:
        """The timer store's files by name: bytes, and segments for a folder (None: the store has none)."""
        root = view.paths.root
        out: dict = {}
        for name in TIMER_FILES:
            p = root / name
            if p.is_dir():
                segs = list_segments(p)
                out[name] = {"segments": len(segs), "bytes": sum(s.size for s in segs)}
            elif p.exists():
                out[name] = {"bytes": p.stat().st_size}
        return ("timerFiles", out) if out else None


TIMERLOG = TimerLog()
