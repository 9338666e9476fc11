"""Every file under `config/` as the broker would load it: which file the document comes from (the
file, or its `.bak` when the file is empty or broken), the `.bak` against the file, and a `.tmp` a
write left behind. `decode config` shows this; the tables' own modules read their contents."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.structures.config import delayoffsets, offsets, persist, subscriptions, topics

ROLES = {
    topics.TOPICS_FILE: "topic table",
    offsets.FILE: "consumer offsets",
    delayoffsets.FILE: "schedule service progress per delay level",
    subscriptions.FILE: "subscription groups",
    "consumerFilter.json": "consumer filters",
    "lmqConsumerOffset.json": "LMQ consumer offsets",
    "timercheck": "timer check (5.x)",
    "timermetrics": "timer metrics (5.x)",
}
MAX_DIFFERENCES = 20  # listed per .bak; the rest are counted


@dataclass
class ConfigFile:
    name: str
    path: Path
    present: bool
    source: Path | None = None  # what the broker loads: the file, its .bak, or nothing
    document: object = None
    error: str | None = None  # why the file was not used (or could not be read at all)
    bak: dict | None = None  # {"present", "sameAsFile", "differences", "moreDifferences"}
    tmp: bool = False
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"file": self.name, "path": str(self.path), "role": ROLES.get(self.name, "unknown to rmqtool"),
                "present": self.present, "loadedFrom": self.source.name if self.source else None,
                "error": self.error, "document": self.document, "bak": self.bak, "tmpPresent": self.tmp,
                "notes": self.notes}


def config_dir(root: Path) -> Path:
    return Path(root) / "config"


def names(directory: Path) -> list[str]:
    """The config files of `directory`: every file there, a `.bak` or `.tmp` counted for its file."""
    if not directory.is_dir():
        return []
    found = set()
    for p in directory.iterdir():
        if p.is_file():
            name = p.name
            for suffix in (persist.BAK, persist.TMP):
                name = name.removesuffix(suffix)
            found.add(name)
    return sorted(found)


def describe(path: Path) -> ConfigFile:
    """One config file as the broker would load it, with its `.bak` and `.tmp`."""
    text = persist.read_text(path)
    item = ConfigFile(path.name, path, text is not None)
    try:
        loaded = persist.load(path)
        item.source, item.document, item.error = loaded.source, loaded.doc, loaded.error
    except RmqError as e:
        item.error = str(e)
    if item.source is not None and item.source != path:
        item.notes.append(f"{path.name} is {'empty' if not text else 'broken'}: the broker loads {item.source.name}")
    bak_path = persist.sibling(path, persist.BAK)
    bak_text = persist.read_text(bak_path)
    if bak_text is not None:
        item.bak = _compare_bak(path, text, bak_path, bak_text)
    if persist.sibling(path, persist.TMP).exists():
        item.tmp = True
        item.notes.append(f"{path.name}.tmp is a write whose rename did not happen; the broker ignores it")
    if path.name == offsets.FILE and isinstance(item.document, dict):
        try:
            bad = offsets.ConsumerOffsets(persist.Loaded(path, item.document, item.source)).bad_keys
        except RmqError as e:
            item.error, bad = str(e), []
        item.notes += [f"offsetTable key {k!r} names no topic@group" for k in bad]
    return item


def describe_all(root: Path, only: str | None = None) -> list[ConfigFile]:
    """Every config file of the store root `root` (or only the one named `only`: a name under config/,
    or a path)."""
    directory = config_dir(root)
    if only is None:
        return [describe(directory / name) for name in names(directory)]
    path = Path(only) if Path(only).is_absolute() or Path(only).exists() else directory / only
    if not path.exists() and not persist.sibling(path, persist.BAK).exists():
        known = ", ".join(names(directory)) or "none"
        raise RmqError(f"no config file {only} in {directory} (files: {known})")
    return [describe(path)]


def _compare_bak(path: Path, text: str | None, bak_path: Path, bak_text: str) -> dict:
    out: dict = {"present": True, "sameAsFile": text == bak_text}
    if text is None or text == bak_text:
        return out
    try:
        diffs = differences(persist.parse(path, text), persist.parse(bak_path, bak_text))
    except RmqError as e:
        out["error"] = str(e)
        return out
    out["differences"] = diffs[:MAX_DIFFERENCES]
    out["moreDifferences"] = max(len(diffs) - MAX_DIFFERENCES, 0)
    return out


def differences(now: object, before: object, where: str = "") -> list[str]:
    """Where two documents differ, as `path: before -> now` lines (the .bak holds the older text)."""
    if isinstance(now, dict) and isinstance(before, dict):
        out = []
        for key in list(before) + [k for k in now if k not in before]:
            at = f"{where}.{key}" if where else str(key)
            if key not in now:
                out.append(f"{at}: only in .bak")
            elif key not in before:
                out.append(f"{at}: not in .bak")
            else:
                out += differences(now[key], before[key], at)
        return out
    if now != before:
        return [f"{where or '(document)'}: {_short(before)} -> {_short(now)}"]
    return []


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
