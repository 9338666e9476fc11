"""The broker's config/ files (topics, consumer and delay offsets, subscriptions): a file the broker would not
load, from itself or its `.bak`, is a finding; a `.tmp` a write left behind is a warning."""

from __future__ import annotations

from pathlib import Path

from rmqtool.report import ERROR, WARNING, Finding
from rmqtool.structures.config import persist
from rmqtool.structures.config.catalog import config_dir, describe_all
from rmqtool.structures.structure import Structure
from rmqtool.structures.view import StoreView

CONFIG_DIR = "config"


class Config(Structure):
    name = "config"
    folder = CONFIG_DIR

    def recognise(self, head: bytes, size: int) -> str | None:
        """A config file holds one JSON object (the broker's fastjson text, `{` first)."""
        return None if head.lstrip()[:1] == b"{" else "not a JSON object"

    def place(self, path: Path) -> Path | None:
        return path.parent.parent if path.parent.name == CONFIG_DIR else None

    def owns(self, path: Path, root: Path) -> bool:
        """Every file under `config/` (its `.bak` and `.tmp` too)."""
        return path.is_relative_to(root / CONFIG_DIR)

    def keeps_folder(self, folder: Path, root: Path) -> bool:
        return folder == root / CONFIG_DIR

    def file_findings(self, view: StoreView) -> list[Finding]:
        """A file neither it nor its `.bak` can be loaded from (the broker starts that table empty), one loaded
        from its `.bak`, and a `.tmp` a write left behind."""
        if not config_dir(view.paths.root).is_dir():
            return []
        found = []
        for item in describe_all(view.paths.root):
            if item.source is None and item.error is not None:
                found.append(Finding(str(item.path), 0, f"the broker cannot load {item.name} ({item.error}): it starts "
                                     "that table empty", 0, ERROR, structure=self.name, kind="config-unreadable"))
            elif item.source is not None and item.source != item.path:
                found.append(Finding(str(item.path), 0, f"{item.name} does not load: the broker loads "
                                     f"{item.source.name}", 0, WARNING, structure=self.name, kind="config-from-bak"))
            elif item.error is not None:
                found.append(Finding(str(item.path), 0, f"{item.name}: {item.error}", 0, ERROR, structure=self.name,
                                     kind="config-invalid"))
            if item.tmp:
                found.append(Finding(str(persist.sibling(item.path, persist.TMP)), 0, "a write's .tmp whose rename did "
                                     "not happen: the broker ignores it", 0, WARNING, structure=self.name,
                                     kind="config-tmp-left"))
        return found


CONFIG = Config()
