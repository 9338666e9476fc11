"""Which broker each store of a `spark-export` is: its `brokerName`, the value of the dataset's column.

A store's name is, first found: `brokerName` in its broker.conf (`--config`), else its `--broker-name`,
else the name of the store's folder. A `--broker-name` that contradicts the broker.conf is refused naming
both, and so are two stores of one name (the second would land in the first one's partition) and a name
that cannot name a partition folder as it is (`brokerName=NAME/`: Spark would escape these characters).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rmqtool.engine.config import StoreConfig, parse_properties
from rmqtool.errors import RmqError

_ESCAPED = set("\"#%'*/:=?\\{[]^\x7f") | {chr(c) for c in range(32)}  # Spark escapes these in partition folders


@dataclass(frozen=True)
class ExportStore:
    """One store to export: its root, its settings and its broker's name."""

    root: Path
    cfg: StoreConfig
    broker: str


def export_stores(roots: list[Path], configs: list[Path | None], names: list[str | None]) -> list[ExportStore]:
    """The stores with their settings and names; `configs` and `names` hold one entry per store (None: not given)."""
    stores, seen = [], {}
    for root, config, given in zip(roots, configs, names, strict=True):
        cfg = StoreConfig.from_file(config)[0] if config else StoreConfig()
        from_conf = parse_properties(Path(config).read_text("latin-1")).get("brokerName") if config else None
        if from_conf and given and given != from_conf:
            raise RmqError(f"{root}: --broker-name {given} contradicts brokerName={from_conf} in {config}")
        name = from_conf or given or Path(root).resolve().name
        bad = sorted(set(name) & _ESCAPED)
        if not name or bad:
            raise RmqError(f"{root}: brokerName {name!r} cannot name a partition folder (it holds {''.join(bad)!r})")
        if name in seen:
            raise RmqError(f"{root}: brokerName {name} is also the name of {seen[name]}: give each store its "
                           "--broker-name")
        seen[name] = root
        stores.append(ExportStore(Path(root), cfg, name))
    return stores


def per_store(values: list, count: int, what: str) -> list:
    """A repeated option's values, one per store: none given (None each), one for all, or one each."""
    if not values:
        return [None] * count
    if len(values) == count:
        return list(values)
    if len(values) == 1 and what == "--config":
        return list(values) * count
    raise RmqError(f"{len(values)} {what} for {count} stores: give one per store"
                   + (", or one for all" if what == "--config" else ""))
