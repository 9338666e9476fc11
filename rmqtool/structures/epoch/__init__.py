"""The epoch file of a 5.x broker in controller mode (`<root>/epochFileCheckpoint`, the broker's
EpochFileCache over its CheckpointFile): which epoch of the master wrote which part of the commitlog.

Text, UTF-8, each line ended by the writing JVM's line separator ("\\n" on Linux):
- line 1: the number of entries (a Java int);
- line 2: the entry lines' CRC: java.util.zip.CRC32 of their text, each line followed by the separator,
  masked to 31 bits (UtilAll.crc32: never negative); 0 in the file means "not checked";
- then one `epoch-startOffset` line per entry, epochs ascending.
An epoch covers the commitlog from its startOffset up to the next epoch's startOffset; the last one
is open (the broker ends it at its own max physical offset when it compares epochs with a master).

The broker's read rule, file by file: a missing file holds no entries; the count line, the CRC line
and a two-part entry line must be Java integers, or the exception escapes and the broker does not
start (it catches only I/O errors); a line that is not two `-`-separated parts is passed over (but
counted in the CRC); the entries must number what line 1 says, then the CRC must match. Over the pair:
the file, unless it is missing, holds no entries or fails a check (count, CRC, bytes that are not
UTF-8): then its `.bak`, the text before the last write (MixAll.string2File). A failing `.bak` leaves
the broker with no epochs. Damage is reported as data (`Finding`), never raised.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path

from rmqtool.report import ERROR, WARNING, Finding
from rmqtool.structures.config.persist import BAK, sibling
from rmqtool.structures.layout import JAVA_LONG_MAX

FILE = "epochFileCheckpoint"
STRUCTURE = "epoch"
LINE_SEPARATOR = b"\n"  # what a Linux JVM appends to each entry line before the CRC
CRC_NOT_CHECKED = 0
CRC_MASK = 0x7FFFFFFF
ENTRY_SEPARATOR = "-"
# Finding kinds: the first three make the broker pass the file over for its .bak; the last stops it.
UNREADABLE, COUNT_MISMATCH, CRC_MISMATCH, NOT_A_NUMBER = "unreadable", "count-mismatch", "crc-mismatch", "not-a-number"
_EOL = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True)
class EpochEntry:
    epoch: int
    startOffset: int
    endOffset: int | None = None  # the next epoch's startOffset; None: the last epoch, open

    def to_json(self) -> dict:
        return {"epoch": self.epoch, "startOffset": self.startOffset, "endOffset": self.endOffset}


@dataclass
class EpochFile:
    """One file (the epoch file or its .bak) as the broker reads it on its own."""

    path: Path
    present: bool
    count: int | None = None  # line 1
    crc: int | None = None  # line 2
    entries_crc: int | None = None  # the CRC of the entry lines as they are
    entries: list[EpochEntry] = field(default_factory=list)  # in file order, without end offsets
    passed_over: list[int] = field(default_factory=list)  # byte offsets of lines that are not entries
    finding: Finding | None = None  # why the broker does not use the file

    @property
    def stops_broker(self) -> bool:
        return self.finding is not None and self.finding.kind == NOT_A_NUMBER

    def to_json(self) -> dict:
        return {"file": self.path.name, "present": self.present, "count": self.count, "crc": self.crc,
                "entriesCrc": self.entries_crc, "crcChecked": self.crc not in (None, CRC_NOT_CHECKED),
                "entries": [{"epoch": e.epoch, "startOffset": e.startOffset} for e in self.entries],
                "passedOverLines": self.passed_over, "problem": self.finding.to_json() if self.finding else None}


@dataclass
class Loaded:
    """What the broker loads from an epoch file and its .bak: the epochs it keeps (by epoch, each ended
    at the next one's start), the file they come from (None: it starts with none), and whether it starts."""

    file: EpochFile
    bak: EpochFile
    source: Path | None
    entries: list[EpochEntry]
    broker_starts: bool = True

    @property
    def bak_read(self) -> bool:
        """Whether the broker reads the .bak: the file stopped nothing and gave no entries."""
        return not self.file.stops_broker and not (self.file.finding is None and self.file.entries)

    @property
    def findings(self) -> list[Finding]:
        """The files' problems: errors in what the broker reads, a warning for a .bak it does not read."""
        out = [self.file.finding] if self.file.finding else []
        if self.bak.finding:
            out.append(self.bak.finding if self.bak_read else replace(self.bak.finding, severity=WARNING))
        return out

    @property
    def last(self) -> EpochEntry | None:
        return self.entries[-1] if self.entries else None

    def to_json(self) -> dict:
        return {"path": str(self.file.path), "loadedFrom": self.source.name if self.source else None,
                "brokerStarts": self.broker_starts, "entries": [e.to_json() for e in self.entries],
                "files": [self.file.to_json(), self.bak.to_json()]}


def java_int(text: str, bits: int = 32) -> int | None:
    """Java's Integer.parseInt (Long.parseLong with bits=64): a sign, decimal digits, in range; else None."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not digits.isdecimal():
        return None
    value = int(text)
    return value if -(1 << (bits - 1)) <= value < (1 << (bits - 1)) else None


def java_split(text: str, separator: str) -> list[str]:
    """Java's String.split on one literal character: trailing empty parts dropped, "" alone kept whole."""
    if separator not in text:
        return [text]
    parts = text.split(separator)
    while parts and not parts[-1]:
        parts.pop()
    return parts


def entries_crc(lines: list[bytes]) -> int:
    """The CRC the broker writes on line 2 for these entry lines."""
    return zlib.crc32(b"".join(line + LINE_SEPARATOR for line in lines)) & CRC_MASK


def lines_of(buf: bytes) -> list[tuple[int, bytes]]:
    """(byte offset, text) of each line as Java's readLine splits it: at \\n, \\r or \\r\\n, no empty last line."""
    out, pos = [], 0
    for m in _EOL.finditer(buf):
        out.append((pos, buf[pos:m.start()]))
        pos = m.end()
    if pos < len(buf):
        out.append((pos, buf[pos:]))
    return out


def _problem(path: Path, offset: int, size: int, kind: str, reason: str) -> Finding:
    return Finding(str(path), offset, reason, size, ERROR, STRUCTURE, kind)


def parse(buf: bytes, path: Path) -> EpochFile:
    """One file's bytes read by the broker's rule for one file (`finding` says why it is not used)."""
    out = EpochFile(path, True)
    try:
        buf.decode("utf-8")
    except UnicodeDecodeError as e:
        out.finding = _problem(path, e.start, e.end - e.start, UNREADABLE, f"byte {e.start} is not UTF-8 text")
        return out
    lines = lines_of(buf)
    head = [java_int(text.decode()) for _, text in lines[:2]]
    for i, name in enumerate(("count", "CRC")):
        if i >= len(lines) or head[i] is None:
            at, text = lines[i] if i < len(lines) else (len(buf), b"")
            shown = repr(text.decode()) if i < len(lines) else "missing"
            out.finding = _problem(path, at, len(text), NOT_A_NUMBER, f"the {name} line is not a Java int: {shown}")
            return out
    out.count, out.crc = head
    body = lines[2:]
    for at, text in body:
        parts = java_split(text.decode(), ENTRY_SEPARATOR)
        if len(parts) != 2:
            out.passed_over.append(at)
            continue
        epoch, start = java_int(parts[0]), java_int(parts[1], 64)
        if epoch is None or start is None:
            out.finding = _problem(path, at, len(text), NOT_A_NUMBER, f"entry {text.decode()!r} is not int-long")
            return out
        out.entries.append(EpochEntry(epoch, start))
    out.entries_crc = entries_crc([text for _, text in body])
    if len(out.entries) != out.count:
        out.finding = _problem(path, 0, len(lines[0][1]), COUNT_MISMATCH,
                               f"line 1 says {out.count} entries, the file holds {len(out.entries)}")
    elif out.crc != CRC_NOT_CHECKED and out.crc != out.entries_crc:
        start = body[0][0] if body else len(buf)
        out.finding = _problem(path, start, len(buf) - start, CRC_MISMATCH,
                               f"line 2 says CRC {out.crc}, the entry lines' CRC is {out.entries_crc}")
    return out


def read_one(path: Path) -> EpochFile:
    """One file read by the broker's rule for one file; absent when it does not exist."""
    try:
        buf = path.read_bytes()
    except FileNotFoundError:
        return EpochFile(path, False)
    except OSError as e:
        return EpochFile(path, True, finding=_problem(path, 0, 0, UNREADABLE, f"cannot read: {e.strerror}"))
    return parse(buf, path)


def kept(entries: list[EpochEntry]) -> list[EpochEntry]:
    """The broker's epoch table from entries in file order: each ended at the next line's start, the
    later of two lines with one epoch kept, ordered by epoch."""
    ends = [e.startOffset for e in entries[1:]] + [None]
    table = {e.epoch: EpochEntry(e.epoch, e.startOffset, end) for e, end in zip(entries, ends, strict=True)}
    return [table[k] for k in sorted(table)]


def load(path: Path) -> Loaded:
    """The epochs the broker loads from the epoch file at `path` and its `.bak`."""
    main, bak = read_one(path), read_one(sibling(path, BAK))
    if main.stops_broker:
        return Loaded(main, bak, None, [], broker_starts=False)
    if main.finding is None and main.entries:
        return Loaded(main, bak, path, kept(main.entries))
    if bak.stops_broker:
        return Loaded(main, bak, None, [], broker_starts=False)
    if bak.finding is None and bak.entries:
        return Loaded(main, bak, bak.path, kept(bak.entries))
    return Loaded(main, bak, None, [])


def load_store(root: Path) -> Loaded | None:
    """The store's epochs as its broker loads them; None when neither the epoch file nor its .bak exists."""
    path = Path(root) / FILE
    if not path.exists() and not sibling(path, BAK).exists():
        return None
    return load(path)


def with_end(entries: list[EpochEntry], end_offset: int) -> list[EpochEntry]:
    """`entries` with the last one ended at `end_offset` (a store's max physical offset), as the broker
    does before comparing epochs; an end before the last epoch's start leaves it open."""
    if not entries or entries[-1].startOffset > end_offset:
        return list(entries)
    return [*entries[:-1], replace(entries[-1], endOffset=end_offset)]


def consistent_point(mine: list[EpochEntry], my_end: int, theirs: list[EpochEntry], their_end: int) -> int:
    """Where two replicas' logs stop agreeing, by the broker's rule: the newest epoch both hold with the
    same start, ended at the earlier of the two ends (each list's last epoch ended at its store's max
    offset). -1 when no epoch matches (the broker then refuses to replicate); an empty `mine` is a new
    replica, which the broker does not truncate: the caller decides."""
    their = {e.epoch: e for e in with_end(theirs, their_end)}
    for e in reversed(with_end(mine, my_end)):
        other = their.get(e.epoch)
        if other is not None and other.startOffset == e.startOffset:
            ends = [x.endOffset if x.endOffset is not None else JAVA_LONG_MAX for x in (e, other)]
            return min(ends)
    return -1
