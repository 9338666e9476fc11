"""Bounds a value read from a file must keep to be what it claims: shared by every structure's
recognition check (is this file what the user says it is?)."""

from __future__ import annotations

LATEST_PLAUSIBLE_MS = 7_258_118_400_000  # 2200-01-01: a stored time past this is not a time
LARGEST_PLAUSIBLE_ENTRY = 1 << 28  # no message of any broker is 256 MiB; four text bytes read as a size are more


def plausible_time(ms: int) -> bool:
    """Whether `ms` can be epoch milliseconds a store wrote (0: never written)."""
    return 0 <= ms < LATEST_PLAUSIBLE_MS


def head_words(head: bytes) -> str:
    """A file's first 8 bytes in hex, for a refusal that says what the file starts with."""
    return head[:8].hex().upper()
