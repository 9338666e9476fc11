"""The broker's config/ files (topics, offsets, subscriptions) as the registry lists it."""

from __future__ import annotations

from rmqtool.structures.structure import Structure

CONFIG = Structure("config", "config")
