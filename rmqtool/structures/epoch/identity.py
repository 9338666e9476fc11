"""The broker identity a 5.x broker in controller mode keeps beside its epoch file (the broker's
BrokerMetadata and TempBrokerMetadata, written by its ReplicasManager).

`<root>/brokerIdentity`: one line, no line end, `clusterName#brokerName#brokerId`: the id the
controller gave this broker. `<root>/brokerIdentity-temp`: the same plus `#registerCheckCode`, while a
registration is under way (deleted once `brokerIdentity` is written). Each is written by deleting it
and writing it again (so no `.bak` is kept) and read as one string, split at `#` (Java's split: empty
parts at the end dropped), the id parsed by Long.valueOf. A file is loaded when the names are not
empty and the id parses (and, for the temp file, the check code is not empty); otherwise the broker
goes on as if it had none. A line end after the id, as an editor leaves it, makes the id unreadable.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rmqtool.errors import RmqError
from rmqtool.report import ERROR, Finding
from rmqtool.structures.config.persist import read_text
from rmqtool.structures.epoch import STRUCTURE, java_int, java_split

FILE, TEMP_FILE = "brokerIdentity", "brokerIdentity-temp"
SEPARATOR = "#"
FIELDS = ("clusterName", "brokerName", "brokerId")
TEMP_FIELDS = (*FIELDS, "registerCheckCode")
NOT_LOADED = "identity-not-loaded"  # the finding kind


@dataclass(frozen=True)
class Identity:
    """One identity file as the broker reads it; `problem` says why it is not loaded."""

    path: Path
    text: str | None = None
    clusterName: str | None = None
    brokerName: str | None = None
    brokerId: int | None = None
    registerCheckCode: str | None = None  # the temp file only
    problem: str | None = None

    @property
    def loaded(self) -> bool:
        return self.problem is None

    def finding(self) -> Finding | None:
        """Why the broker goes on as if the file were not there, as a finding; None when it is loaded."""
        if self.problem is None:
            return None
        size = len(self.text.encode()) if self.text is not None else 0
        return Finding(str(self.path), 0, self.problem, size, ERROR, STRUCTURE, NOT_LOADED)

    def to_json(self) -> dict:
        doc = {"file": self.path.name, "text": self.text, "clusterName": self.clusterName,
               "brokerName": self.brokerName, "brokerId": self.brokerId}
        if self.path.name == TEMP_FILE:
            doc["registerCheckCode"] = self.registerCheckCode
        return {**doc, "loaded": self.loaded, "problem": self.problem}


def parse(text: str, path: Path) -> Identity:
    """The fields the broker takes from `text`, in order, up to the first it cannot take."""
    names = TEMP_FIELDS if path.name == TEMP_FILE else FIELDS
    parts = java_split(text, SEPARATOR)
    values: dict = {}
    for i, name in enumerate(names):
        if i >= len(parts):
            return Identity(path, text, **values, problem=f"no {name}: {len(parts)} '#'-separated part(s)")
        value = java_int(parts[i], 64) if name == "brokerId" else parts[i]
        if value is None:
            return Identity(path, text, **values, problem=f"brokerId {parts[i]!r} is not a Java long")
        values[name] = value
    empty = [n for n in names if values[n] == ""]
    return Identity(path, text, **values, problem=f"{', '.join(empty)} empty" if empty else None)


def read(path: Path) -> Identity | None:
    """The identity file at `path` as the broker reads it; None when it does not exist."""
    try:
        text = read_text(path)
    except RmqError as e:
        return Identity(path, problem=str(e))
    return None if text is None else parse(text, path)


def read_store(root: Path) -> tuple[Identity | None, Identity | None]:
    """(brokerIdentity, brokerIdentity-temp) of the store at `root`, each None when absent."""
    return read(Path(root) / FILE), read(Path(root) / TEMP_FILE)
