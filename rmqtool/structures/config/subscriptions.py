"""`config/subscriptionGroup.json`: the consumer groups the broker knows (`SubscriptionGroupManager`):
`subscriptionGroupTable` maps a group to its settings (consumeEnable, retryQueueNums,
retryMaxTimes, ...) beside a `dataVersion`."""

from __future__ import annotations

from pathlib import Path

from rmqtool.structures.config import persist

FILE = "subscriptionGroup.json"
TABLE = "subscriptionGroupTable"


def subscriptions_path(root: Path) -> Path:
    return Path(root) / "config" / FILE


def groups(root: Path) -> dict[str, dict]:
    """Group -> its settings; empty when the file is absent or holds no table."""
    doc = persist.load(subscriptions_path(root)).doc
    table = doc.get(TABLE) if isinstance(doc, dict) else None
    return {str(k): v for k, v in table.items() if isinstance(v, dict)} if isinstance(table, dict) else {}
